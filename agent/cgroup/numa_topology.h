// The host's NUMA nodes and the CPUs of each, from sysfs: what per-node figures are labelled
// by, and what "the whole host" is for a cgroup without a cpuset of its own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

struct NumaTopology {
  std::map<int, std::vector<int>> node_cpus;  // every node, its CPUs (none: a memory-only node)
  std::vector<int> online_cpus;               // ascending
  std::vector<int> memory_nodes;              // nodes with memory (a cpuset's mems at most)

  // The node of `cpu`, -1 when no node lists it.
  int NodeOfCpu(int cpu) const;
  // Node ids, ascending.
  std::vector<int> Nodes() const;
};

// Reads <sys_root>/node/node<N>/cpulist for each node, <sys_root>/node/has_memory and
// <sys_root>/cpu/online. A kernel without CONFIG_NUMA has no node directory: then one node 0
// holds every online CPU and the memory. Errors name the file that could not be read.
absl::StatusOr<NumaTopology> ReadNumaTopology(const std::string& sys_root = "/sys/devices/system");

}  // namespace stagewatch
