// The columns the placement probe and the sched tracker count by: the host's NUMA nodes in
// order (cgroup/numa_topology.h reads them), and the column of each possible CPU's node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cgroup/numa_topology.h"

namespace stagewatch {

struct CpuNodes {
  // The nodes' numbers, ascending; a node's column is its index here.
  std::vector<uint32_t> nodes = {0};
  // CPU → the column of its node; a CPU no node lists (offline at start) is in column 0.
  std::vector<uint32_t> column_of_cpu;

  uint32_t ColumnOf(int cpu) const {
    return cpu >= 0 && static_cast<size_t>(cpu) < column_of_cpu.size() ? column_of_cpu[cpu] : 0;
  }
};

// The columns of `topology` for `cpus` possible CPUs.
CpuNodes CpuNodesOf(const NumaTopology& topology, int cpus);

// CpuNodesOf the host's topology (under `sys_root`, as ReadNumaTopology).
absl::StatusOr<CpuNodes> ReadCpuNodes(int cpus,
                                      const std::string& sys_root = "/sys/devices/system");

}  // namespace stagewatch
