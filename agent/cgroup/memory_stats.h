// Memory usage, limits and events of one cgroup, read from the v1 or v2 memory controller.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"

namespace stagewatch {

// Sizes in bytes. Counters are hierarchical (they include descendant cgroups) in both versions.
struct MemoryCgroupStats {
  uint64_t usage_bytes = 0;
  std::optional<uint64_t> limit_bytes;  // none when unlimited
  std::optional<uint64_t> high_bytes;   // v2 memory.high; none when unset or on v1
  std::optional<uint64_t> swap_bytes;   // none without swap accounting
  std::optional<uint64_t> peak_bytes;   // v1 max_usage_in_bytes, v2 memory.peak (5.19+)
  uint64_t inactive_file_bytes = 0;
  uint64_t working_set_bytes = 0;   // usage - inactive_file, floored at 0
  std::optional<uint64_t> pgfault;  // page fault events
  std::optional<uint64_t> pgmajfault;
  // v2: every line of memory.events (low, high, max, oom, oom_kill, ...). v1: "failcnt" from
  // memory.failcnt and "oom_kill" from memory.oom_control, when the kernel has them.
  std::map<std::string, uint64_t> events;
};

// A file of "key value" lines with unsigned values (memory.stat, memory.events), every line
// checked. `file` names the file in error messages, as in every parser here.
absl::StatusOr<std::map<std::string, uint64_t>> ParseMemoryKeyedFile(std::string_view contents,
                                                                     std::string_view file);

// A file holding one unsigned number (memory.current, memory.usage_in_bytes, ...).
absl::StatusOr<uint64_t> ParseMemoryValue(std::string_view contents, std::string_view file);

// A v2 limit file (memory.max, memory.high): a number, or "max" for none (nullopt).
absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimitV2(std::string_view contents,
                                                           std::string_view file);

// v1 memory.limit_in_bytes: nullopt for unlimited, which the kernel shows as a value of at
// least 2^62 (PAGE_COUNTER_MAX rounded down to pages, e.g. 9223372036854771712).
absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimitV1(std::string_view contents,
                                                           std::string_view file);

// Fills inactive_file_bytes, pgfault and pgmajfault from memory.stat's text, preferring v1's
// hierarchical total_* keys, every line checked as ParseMemoryKeyedFile does. InvalidArgument
// when inactive_file is missing.
absl::Status ParseMemoryStat(std::string_view contents, std::string_view file,
                             MemoryCgroupStats& stats);

// The stats of the cgroup at `cgroup_path` in the memory hierarchy: v2 when the layout keys on
// it, else v1. Missing usage or memory.stat files are NotFound; other files are optional.
// `read` gets each file's contents (the sampler keeps its domains' files open).
absl::StatusOr<MemoryCgroupStats> ReadMemoryStats(const CgroupLayout& layout,
                                                  std::string_view cgroup_path,
                                                  CgroupFileRead read = ReadCgroupFile);

// One figure each, from its one file, read as ReadMemoryStats reads it (which reads them all):
// NotFound when the file is missing, or the host mounts no memory hierarchy.
// The usage, the first file ReadMemoryStats reads (v1 memory.usage_in_bytes, v2
// memory.current): one read, to tell whether the rest can have moved.
absl::StatusOr<uint64_t> ReadMemoryUsage(const CgroupLayout& layout, std::string_view cgroup_path,
                                         CgroupFileRead read = ReadCgroupFile);
// The hard limit (v1 memory.limit_in_bytes, v2 memory.max); nullopt when unlimited.
absl::StatusOr<std::optional<uint64_t>> ReadMemoryMax(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read = ReadCgroupFile);
// The same of the cgroup directory `dir` itself (cgroup2's when `v2`, else in the v1 memory
// hierarchy): what a writer of the limit reads back to see what the kernel kept.
absl::StatusOr<std::optional<uint64_t>> ReadMemoryMaxIn(std::string_view dir, bool v2,
                                                        CgroupFileRead read = ReadCgroupFile);
// v2 memory.high, or v1 memory.soft_limit_in_bytes, the nearest v1 has (the kernel reclaims
// the cgroup back towards it first when the host runs short); nullopt when none.
absl::StatusOr<std::optional<uint64_t>> ReadMemorySoftLimit(const CgroupLayout& layout,
                                                            std::string_view cgroup_path,
                                                            CgroupFileRead read = ReadCgroupFile);
// The kernel's high-water mark: v1 memory.max_usage_in_bytes, v2 memory.peak (Linux 5.19+).
absl::StatusOr<uint64_t> ReadMemoryPeak(const CgroupLayout& layout, std::string_view cgroup_path,
                                        CgroupFileRead read = ReadCgroupFile);
// How often the hard limit was hit: v1 memory.failcnt, v2 the "max" count of memory.events
// (nullopt when the file has no such line).
absl::StatusOr<std::optional<uint64_t>> ReadMemoryFailcnt(const CgroupLayout& layout,
                                                          std::string_view cgroup_path,
                                                          CgroupFileRead read = ReadCgroupFile);

// Only the cgroup's own limit, cheap enough to ask of every cgroup of a stage: v1
// memory.limit_in_bytes, v2 the lower of memory.max and memory.high (a soft limit); nullopt
// when unlimited. NotFound when the limit file is missing.
absl::StatusOr<std::optional<uint64_t>> ReadMemoryLimit(const CgroupLayout& layout,
                                                        std::string_view cgroup_path);

// The lower of two optional limits (none = unlimited).
std::optional<uint64_t> LowerLimit(std::optional<uint64_t> a, std::optional<uint64_t> b);

}  // namespace stagewatch
