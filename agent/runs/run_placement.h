// Where a run ran, from what its row holds (run_record.h): its remote memory share, its
// main node by CPU time and by memory, and the lines `runs show` prints of them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runs/run_record.h"

namespace stagewatch {

// The part of its memory on nodes other than the ones its CPU time ran on, weighted by that
// CPU time (cgroup/remote_memory_share.h); nullopt without both figures.
std::optional<double> RunRemoteMemoryShare(const RunRecord& r);

// The node that holds the largest part of a total, and that part (0..1).
struct MainNode {
  int node = 0;
  double share = 0;
};
std::optional<MainNode> MainCpuNode(const std::map<int, double>& cpu_seconds_by_node);
std::optional<MainNode> MainMemoryNode(const NumaMemory& memory);

// "node 0 1.2 s (82%), node 1 0.3 s (18%)"; "" when empty.
std::string CpuByNodeText(const std::map<int, double>& cpu_seconds_by_node);
// "node 0 10.0 MiB (36%), node 1 18.0 MiB (64%)"; "" when empty.
std::string MemoryByNodeText(const NumaMemory& memory);

}  // namespace stagewatch
