#include "runs/pipeline_run.h"

#include "absl/strings/str_cat.h"
#include "config/config_validate.h"
#include "runs/run_id.h"

namespace stagewatch {

absl::Status CheckPipelineName(std::string_view name) {
  return config_internal::CheckPipelineName(name);
}

absl::Status CheckPipelineRunId(std::string_view id) {
  if (CheckRunId(id).ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "pipeline run \"", std::string(id.substr(0, 120)),
      "\" is not valid; use up to 128 letters, digits, \"_\", \".\" and \"-\", starting with a "
      "letter or digit (e.g. the night's date, 2026-12-03)"));
}

absl::CivilDay NightDayOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone) {
  // In clock time, not elapsed time: on a day the clocks change, 12:30 is still after 12:00.
  return absl::CivilDay(absl::ToCivilSecond(at, zone) - absl::ToInt64Seconds(night_starts));
}

std::string NightOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone) {
  return absl::FormatCivilTime(NightDayOf(at, night_starts, zone));
}

absl::Time NightDeadline(absl::Time at, absl::Duration night_starts, absl::Duration deadline,
                         absl::TimeZone zone) {
  const absl::CivilSecond day(NightDayOf(at, night_starts, zone));
  const absl::CivilSecond start = day + absl::ToInt64Seconds(night_starts);
  absl::CivilSecond end = day + absl::ToInt64Seconds(deadline);
  if (end <= start) end += 24 * 3600;
  return absl::FromCivil(end, zone);
}

std::string DiscoveredPipelineRun(const PipelinesConfig& pipelines, const std::string& pipeline,
                                  absl::Time start, absl::TimeZone zone) {
  if (pipeline.empty()) return "";
  const auto it = pipelines.find(pipeline);
  const PipelineConfig config = it == pipelines.end() ? PipelineConfig{} : it->second;
  return NightOf(start, config.night_starts, zone);
}

}  // namespace stagewatch
