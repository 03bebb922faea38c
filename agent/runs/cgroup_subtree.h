// A run's cgroup with the sub-cgroups its command made inside it: its processes, and its
// removal deepest first. The launcher and whoever closes a dead launcher's run use these.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stagewatch {

// `dir` and every cgroup directory beneath it, deepest first (`dir` last). Empty when `dir`
// is gone.
std::vector<std::string> CgroupSubtree(const std::string& dir);

// The processes in `dir` and its sub-cgroups (their cgroup.procs). NotFound when `dir` is
// gone; an error when a cgroup.procs cannot be read (so no caller takes it for empty).
absl::StatusOr<std::vector<pid_t>> ProcessesInSubtree(const std::string& dir);

// Removes `dir` and its sub-cgroups, deepest first, SIGKILLing what is left in each and, when
// `reap` (the caller is the processes' subreaper), reaping it; retries while the kernel still
// counts exiting tasks (EBUSY), until `deadline`. A directory already gone counts as removed.
absl::Status RemoveCgroupSubtree(const std::string& dir, bool reap,
                                 std::chrono::steady_clock::time_point deadline);

}  // namespace stagewatch
