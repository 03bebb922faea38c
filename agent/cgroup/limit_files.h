// The files that hold a cgroup's limits in each version: the one place they are named, for
// their readers (memory_stats, cpu_limits) and the run's cgroup that writes them
// (runs/run_cgroup).
#pragma once

namespace stagewatch {

struct LimitFiles {
  const char* memory_max;   // the hard limit
  const char* memory_high;  // cgroup2's throttling limit; v1's soft limit, the nearest it has
  const char* cpu_max;      // cgroup2 "QUOTA PERIOD"; v1 the quota alone
  const char* cpu_period;   // v1 only: cgroup2's cpu_max holds the period
  const char* cpu_weight;   // v1 cpu.shares
  const char* cpuset_cpus;  // the CPUs asked for (cgroup2: "" takes the parent's)
  const char* cpuset_mems;  // the memory nodes asked for
  const char* cpuset_cpus_effective;  // what the kernel gives: asked ∩ the parent's
  const char* cpuset_mems_effective;
};

inline constexpr LimitFiles kV1LimitFiles{"memory.limit_in_bytes", "memory.soft_limit_in_bytes",
                                          "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares",
                                          "cpuset.cpus", "cpuset.mems", "cpuset.effective_cpus",
                                          "cpuset.effective_mems"};
inline constexpr LimitFiles kV2LimitFiles{"memory.max", "memory.high", "cpu.max", "",
                                          "cpu.weight", "cpuset.cpus", "cpuset.mems",
                                          "cpuset.cpus.effective", "cpuset.mems.effective"};

inline const LimitFiles& LimitFilesOf(bool v2) { return v2 ? kV2LimitFiles : kV1LimitFiles; }

}  // namespace stagewatch
