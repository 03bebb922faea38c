// CPU usage and CFS throttling of one cgroup, read from cgroupfs (v1 cpu + cpuacct, or v2).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"

namespace stagewatch {

// All times in nanoseconds. A field is nullopt when the host does not report it (no cpuacct
// hierarchy, or a v2 cgroup without the cpu controller, whose cpu.stat has no throttling).
struct CpuCgroupStats {
  std::optional<uint64_t> usage_ns;
  std::optional<uint64_t> nr_periods;
  std::optional<uint64_t> nr_throttled;
  std::optional<uint64_t> throttled_ns;
  bool operator==(const CpuCgroupStats&) const = default;
};

// v1 cpu.stat: nr_periods, nr_throttled, throttled_time (ns). usage_ns stays nullopt.
// `file` names the file in error messages, as in every parser here.
absl::StatusOr<CpuCgroupStats> ParseCpuStatV1(std::string_view contents, std::string_view file);

// v1 cpuacct.usage: one number, nanoseconds.
absl::StatusOr<uint64_t> ParseCpuacctUsage(std::string_view contents, std::string_view file);

// v2 cpu.stat: usage_usec, and nr_periods, nr_throttled, throttled_usec when the cpu
// controller is enabled (all three or none). Microseconds become nanoseconds.
absl::StatusOr<CpuCgroupStats> ParseCpuStatV2(std::string_view contents, std::string_view file);

// The stats of the cgroup at `cgroup_path` (within the keyed hierarchy). Keyed on v2: its
// cpu.stat. Otherwise the same path in the v1 cpu and cpuacct hierarchies; a hierarchy the
// host does not mount leaves its fields nullopt, a missing file there is NotFound.
absl::StatusOr<CpuCgroupStats> ReadCpuStats(const CgroupLayout& layout,
                                            std::string_view cgroup_path,
                                            CgroupFileRead read = ReadCgroupFile);

// Each of its two files alone, for a reader that reads them at different rates (a run's,
// runs/run_cgroup_files.h); NotFound when missing. cpu.stat: v2's (usage and throttling), or
// the v1 cpu hierarchy's (throttling only).
absl::StatusOr<CpuCgroupStats> ReadCpuStat(const CgroupLayout& layout,
                                           std::string_view cgroup_path,
                                           CgroupFileRead read = ReadCgroupFile);
// v1 cpuacct.usage, in nanoseconds; NotFound on cgroup2, whose cpu.stat holds the usage.
absl::StatusOr<uint64_t> ReadCpuacctUsage(const CgroupLayout& layout,
                                          std::string_view cgroup_path,
                                          CgroupFileRead read = ReadCgroupFile);

}  // namespace stagewatch
