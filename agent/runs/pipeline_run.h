// Pipeline runs: the runs of one pipeline's night (or of one driver script's invocation) share
// a pipeline name and a pipeline-run id.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "config/pipelines_config.h"

namespace stagewatch {

// A pipeline name: as a stage name (letters, digits, "_", ".", "-"; a letter or "_" first).
absl::Status CheckPipelineName(std::string_view name);
// A pipeline-run id: as a run id (up to 128 letters, digits, "_", ".", "-").
absl::Status CheckPipelineRunId(std::string_view id);

// The night `at` belongs to, for a pipeline whose nights start at `night_starts` after local
// midnight (default 12:00: a night is 12:00 to 12:00): the date the night starts, "2026-12-03".
// Counted on the local clock, so a night starts at the same time of day when the clocks change.
std::string NightOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone);
absl::CivilDay NightDayOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone);

// The window end of the night `at` belongs to: the first `deadline` after local midnight that
// comes after the night started (a deadline of 06:00 for nights from 12:00 is the next morning).
absl::Time NightDeadline(absl::Time at, absl::Duration night_starts, absl::Duration deadline,
                         absl::TimeZone zone);

// The pipeline run a run no launcher grouped joins when it starts at `start` in a stage of
// `pipeline`: the night it starts in, by the pipeline's night_starts (12:00 when `pipelines`
// does not list it); "" for a stage of no pipeline.
std::string DiscoveredPipelineRun(const PipelinesConfig& pipelines, const std::string& pipeline,
                                  absl::Time start, absl::TimeZone zone);

}  // namespace stagewatch
