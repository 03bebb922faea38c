// Pipeline runs: the runs of one pipeline's night (or of one driver script's invocation) share
// a pipeline name and a pipeline-run id.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace stagewatch {

// A pipeline name: as a stage name (letters, digits, "_", ".", "-"; a letter or "_" first).
absl::Status CheckPipelineName(std::string_view name);
// A pipeline-run id: as a run id (up to 128 letters, digits, "_", ".", "-").
absl::Status CheckPipelineRunId(std::string_view id);

// The night `at` belongs to, for a pipeline whose nights start at `night_starts` after local
// midnight (default 12:00: a night is 12:00 to 12:00): the date the night starts, "2026-12-03".
std::string NightOf(absl::Time at, absl::Duration night_starts, absl::TimeZone zone);

}  // namespace stagewatch
