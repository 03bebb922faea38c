// How many of a cgroup's threads are in each scheduler state, from /proc/<tid>/stat.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

struct TaskStateCounts {
  uint64_t runnable = 0;         // R: running or waiting for a CPU
  uint64_t sleeping = 0;         // S, I (idle kernel thread), P (parked kernel thread)
  uint64_t uninterruptible = 0;  // D
  uint64_t stopped = 0;          // T (stopped by a signal), t (stopped by a tracer)
  uint64_t zombie = 0;           // Z, X (dead, being reaped)
};

// The state letter of a /proc/<tid>/stat line "tid (comm) S ...". comm may hold spaces and
// parentheses, so the state follows the LAST ')'. InvalidArgument when the line has no such
// shape.
absl::StatusOr<char> ParseStatState(std::string_view stat_line);

// Counts the threads directly in the cgroup directory `cgroup_dir` (not its descendants),
// listed by `tasks` (v1), else `cgroup.threads` (v2), else `cgroup.procs`. Threads that exit
// while being read are skipped.
absl::StatusOr<TaskStateCounts> ReadTaskStates(const std::string& cgroup_dir,
                                               const std::string& proc_root = "/proc");

}  // namespace stagewatch
