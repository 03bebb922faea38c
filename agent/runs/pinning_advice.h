// Whether a stage's runs should be pinned to one NUMA node: when their CPU time or memory is
// not mostly on one node, or the memory mostly sits away from the CPU time, `stagewatch
// advise` suggests the cpuset of the node where most CPU time ran, its memory with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroup/numa_topology.h"
#include "runs/run_record.h"

namespace stagewatch {

struct PinningAdvice {
  int cpu_node = 0;
  double cpu_share = 0;  // of the runs' CPU time, on cpu_node
  int memory_node = 0;
  double memory_share = 0;  // of the runs' memory, on memory_node
  std::string cpuset_cpus;  // cpu_node's CPUs ("0-15")
  std::string cpuset_mems;  // cpu_node: the memory goes where the CPU time does
  // "validate: 82% of its CPU time on node 0, 64% of its memory on node 1; pin with
  // `--cpuset-cpus 0-15 --cpuset-mems 0`"
  std::string text;
};

// A share of a stage's CPU time or memory on one node at least this is "mostly on one node".
inline constexpr double kMostlyOnOneNode = 0.9;

// From the ended runs' CPU time and memory by node (summed over them); nullopt when they are
// placed well (mostly on one node, memory where the CPU time is), or hold no such figures.
std::optional<PinningAdvice> AdvisePinning(const std::string& stage,
                                           const std::vector<RunRecord>& runs,
                                           const NumaTopology& topology);

}  // namespace stagewatch
