// What the probes held for a run's cgroups: read at its end, and at the rmdir of each
// descendant cgroup that went before it (the trackers forget a removed cgroup's entries seconds
// later, so a child's figures are kept from its own rmdir). Summed over those reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace stagewatch {

struct RunEndReadings {
  std::optional<double> run_queue_wait_seconds;
  std::optional<double> run_queue_throttled_seconds;
  std::optional<double> reclaim_stall_seconds;
  std::optional<std::map<uint64_t, uint64_t>> preemptions;  // preempting cgroup id → times
  std::optional<std::pair<uint64_t, uint64_t>> migrations;  // {within a node, across nodes}
  std::optional<std::map<int, double>> cpu_seconds_by_node;
};

// `into` + `more`, figure by figure: a figure either read holds is held (a descendant read
// where the end read found nothing still counts).
void AddReadings(RunEndReadings& into, const RunEndReadings& more);

}  // namespace stagewatch
