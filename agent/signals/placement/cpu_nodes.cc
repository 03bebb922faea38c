#include "signals/placement/cpu_nodes.h"

#include <algorithm>

namespace stagewatch {

CpuNodes CpuNodesOf(const NumaTopology& topology, int cpus) {
  CpuNodes out;
  out.column_of_cpu.assign(std::max(cpus, 0), 0);
  if (topology.node_cpus.empty()) return out;
  out.nodes.clear();
  for (const auto& [node, node_cpus] : topology.node_cpus) {
    const uint32_t column = out.nodes.size();
    out.nodes.push_back(static_cast<uint32_t>(node));
    for (int cpu : node_cpus) {
      if (cpu < cpus) out.column_of_cpu[cpu] = column;
    }
  }
  return out;
}

absl::StatusOr<CpuNodes> ReadCpuNodes(int cpus, const std::string& sys_root) {
  absl::StatusOr<NumaTopology> topology = ReadNumaTopology(sys_root);
  if (!topology.ok()) return topology.status();
  return CpuNodesOf(*topology, cpus);
}

}  // namespace stagewatch
