// Collector "placement": where each stage runs, as the placement tracker last folded its
// probe's map (CPU migrations within and across NUMA nodes) and the sched tracker its on-CPU
// time by node; where its memory lives and the cpusets it may use, from the sampler's
// snapshot. It reads nothing itself: all are made on the sampler's clock.
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/placement_memory_series.h"
#include "sampler/memory_sampler.h"
#include "signals/placement/placement_tracker.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class PlacementCollector : public Collector {
 public:
  // `migrations` is null without the placement probe, `oncpu` without the sched probe (or the
  // sched signal switched off): each family goes with its source. `nodes`: the NUMA nodes'
  // numbers, in the order of the sched tracker's CPU groups.
  // `sampler`'s snapshot has the memory by node and the cpusets (its placement part).
  PlacementCollector(const PlacementTracker* migrations, const SchedTracker* oncpu,
                     std::vector<uint32_t> nodes, StageResolver* stages,
                     const MemorySampler* sampler);
  std::string_view name() const override { return "placement"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectMigrations(std::vector<prometheus::MetricFamily>* out);
  void CollectNodeTime(const std::map<StageId, SchedStageTotals>& totals,
                       std::vector<prometheus::MetricFamily>* out);
  // Each stage's CPU seconds per node (indexed by node number) that its remote share weighs
  // memory by: its last whole kRemoteWindow with CPU time, or, before one, the time so far.
  StageNodeCpuSeconds RecentCpuByNode(const std::map<StageId, SchedStageTotals>& totals,
                                      absl::Time now);

  struct CpuWindow {
    absl::Time start;
    std::vector<uint64_t> start_ns;    // by CPU group, at `start`
    std::vector<double> last_seconds;  // by node number, the last whole window with CPU time
  };
  static constexpr absl::Duration kRemoteWindow = absl::Minutes(1);

  const PlacementTracker* const migrations_;
  const SchedTracker* const oncpu_;
  const std::vector<uint32_t> nodes_;
  StageResolver* const stages_;
  const MemorySampler* const sampler_;
  absl::flat_hash_map<StageId, CpuWindow> windows_;  // scrapes are serialised: no lock
};

}  // namespace stagewatch::exporters
