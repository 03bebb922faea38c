// Per-cgroup memory controller counters read from cgroupfs: the kernel's ground truth.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"

namespace stagewatch {

// OOM kills in the cgroup directory `cgroup_dir` of hierarchy `key`.
// v1 memory: `oom_kill` of memory.oom_control. v2: `oom_kill` of memory.events.local, since
// memory.events is hierarchical and summing a stage's nested cgroups would double count;
// memory.events only on kernels without the .local file (before 5.2).
absl::StatusOr<uint64_t> ReadOomKillCount(const std::string& cgroup_dir, cgroup_key_hierarchy key);

}  // namespace stagewatch
