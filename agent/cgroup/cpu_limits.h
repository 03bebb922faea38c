// The CPU limits of one cgroup and its CFS period, read from cgroupfs (v1 cpu, or v2).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"

namespace stagewatch {

// The limits from their files' contents, as RunLimits holds them: nullopt when unlimited or at
// the kernel's default (as a launcher run without that flag), or when the text does not parse.
// The CPUs a CFS quota allows: v2 cpu.max "QUOTA PERIOD" (both in `quota`, `period` unused),
// v1 cpu.cfs_quota_us and cpu.cfs_period_us. "max" or -1 mean none.
std::optional<double> CpuMaxCoresOf(std::string_view quota, std::string_view period, bool v2);
// v2 cpu.weight, or v1 cpu.shares as a weight (1024 shares are weight 100, as systemd converts
// them). The default (100, 1024 shares) is none.
std::optional<uint32_t> CpuWeightOf(std::string_view text, bool v2);

// The same, read from the files of the cgroup at `cgroup_path` in the keyed hierarchy's cpu
// mirror (v1) or in cgroup2. NotFound when a file, or the cpu hierarchy, is missing.
absl::StatusOr<std::optional<double>> ReadCpuMaxCores(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read = ReadCgroupFile);
absl::StatusOr<std::optional<uint32_t>> ReadCpuWeight(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read = ReadCgroupFile);

// The CFS period in seconds: v1 cpu.cfs_period_us, v2 the second field of cpu.max.
// InvalidArgument when it is not a positive number.
absl::StatusOr<double> ReadCfsPeriodSeconds(const CgroupLayout& layout,
                                            std::string_view cgroup_path,
                                            CgroupFileRead read = ReadCgroupFile);

}  // namespace stagewatch
