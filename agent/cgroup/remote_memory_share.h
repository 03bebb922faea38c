// The remote share of a stage's memory: the part of it on nodes other than the ones its CPU
// time ran on, weighted by that CPU time. 0 when its memory sits where it runs, 1 when all of
// it sits on nodes it never ran on.
#pragma once

#include <optional>
#include <vector>

#include "cgroup/numa_stat.h"

namespace stagewatch {

// sum over nodes n of cpu_share(n) * (1 - memory(n) / memory), with memory(n) the anon and
// file bytes on node n and cpu_share(n) node n's part of the CPU seconds (indexed by node id)
// over the same interval. Absent (not 0) without memory or without CPU time: nothing to weigh.
// On one node, 0.
std::optional<double> RemoteMemoryShare(const NumaMemory& memory,
                                        const std::vector<double>& cpu_seconds_by_node);

}  // namespace stagewatch
