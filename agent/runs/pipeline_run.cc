#include "runs/pipeline_run.h"

#include "absl/strings/str_cat.h"
#include "config/config_validate.h"
#include "runs/run_id.h"

namespace stagewatch {

absl::Status CheckPipelineName(std::string_view name) {
  absl::Status s = config_internal::CheckStageName(name);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(
      "pipeline name \"", std::string(name.substr(0, 120)),
      "\" is not valid; use letters, digits, \"_\", \".\" and \"-\", starting with a letter or "
      "\"_\""));
}

absl::Status CheckPipelineRunId(std::string_view id) {
  if (CheckRunId(id).ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "pipeline run \"", std::string(id.substr(0, 120)),
      "\" is not valid; use up to 128 letters, digits, \"_\", \".\" and \"-\", starting with a "
      "letter or digit (e.g. the night's date, 2026-12-03)"));
}

std::string NightOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone) {
  return absl::FormatTime("%Y-%m-%d", at - night_starts, zone);
}

}  // namespace stagewatch
