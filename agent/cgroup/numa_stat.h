// Where a cgroup's memory lives: memory.numa_stat, bytes per NUMA node, anon and file. Both
// versions count the cgroup's descendants too (v1's hierarchical_* lines), as a stage top's
// memory includes its runs'.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"

namespace stagewatch {

struct NumaNodeMemory {
  uint64_t anon_bytes = 0;
  uint64_t file_bytes = 0;
};
using NumaMemory = std::map<int, NumaNodeMemory>;  // by node id

// Its anon and file bytes over all nodes.
uint64_t NumaMemoryBytes(const NumaMemory& memory);

// cgroup v1: "hierarchical_anon=N N0=P N1=P" lines and their kin, in pages (times
// `page_size`); the cgroup's own "anon=" and "file=" lines where a kernel has no hierarchical
// ones. cgroup2: "anon N0=B N1=B" lines, in bytes, among others this reader skips.
// InvalidArgument, naming `file` and the line, for text that is not such a file or lacks the
// anon or file line.
absl::StatusOr<NumaMemory> ParseNumaStatV1(std::string_view contents, uint64_t page_size,
                                           std::string_view file);
absl::StatusOr<NumaMemory> ParseNumaStatV2(std::string_view contents, std::string_view file);

// The memory.numa_stat of the cgroup at `cgroup_path` in the memory hierarchy (v2 when the
// layout keys on it, else v1). NotFound when the file is missing: a kernel without CONFIG_NUMA
// has none, and neither has a cgroup just removed.
absl::StatusOr<NumaMemory> ReadNumaStat(const CgroupLayout& layout, std::string_view cgroup_path,
                                        CgroupFileRead read = ReadCgroupFile);

// Whether this host's cgroups have memory.numa_stat: OK, or why not (no memory controller, or
// a kernel built without CONFIG_NUMA, which has no <sys_root>/node either), for `stagewatch
// features`.
absl::Status CheckNumaStatAvailable(const CgroupLayout& layout,
                                    std::string_view sys_root = "/sys/devices/system");

}  // namespace stagewatch
