// Which NUMA node each CPU belongs to, from /sys/devices/system/node/node<N>/cpulist. The
// placement probe splits migrations by it, and the sched tracker the on-CPU time (its CPU
// groups are the nodes' columns).
// (A minimal reader of its own; agent/cgroup/numa_topology.* reads the same files for memory.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

inline constexpr char kNodeSysDir[] = "/sys/devices/system/node";

struct CpuNodes {
  // The nodes' numbers, ascending; a node's column is its index here.
  std::vector<uint32_t> nodes = {0};
  // CPU → the column of its node; a CPU no node lists (offline at start) is in column 0.
  std::vector<uint32_t> column_of_cpu;

  uint32_t ColumnOf(int cpu) const {
    return cpu >= 0 && static_cast<size_t>(cpu) < column_of_cpu.size() ? column_of_cpu[cpu] : 0;
  }
};

// "0-3,8,10-11" (the kernel's CPU list format) as inclusive ranges; an error names the list.
absl::StatusOr<std::vector<std::pair<uint32_t, uint32_t>>> ParseCpuList(std::string_view text);

// The nodes under `node_dir` for `cpus` possible CPUs. A host without the directory (a kernel
// without CONFIG_NUMA) has every CPU on node 0.
absl::StatusOr<CpuNodes> ReadCpuNodes(int cpus, const std::string& node_dir = kNodeSysDir);

}  // namespace stagewatch
