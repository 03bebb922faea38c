// Run ids: generated ones sort by start time ("20261201T074512Z-3f9a"); given ones are checked.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace stagewatch {

std::string NewRunId(absl::Time now);

// OK when `id` can name a run (and its cgroup directory), else InvalidArgument saying how to
// fix it.
absl::Status CheckRunId(std::string_view id);

}  // namespace stagewatch
