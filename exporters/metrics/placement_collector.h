// Collector "placement": where each stage runs, as the placement tracker last folded its
// probe's map (CPU migrations within and across NUMA nodes) and the sched tracker its on-CPU
// time by node. It reads nothing itself: both are collected on the sampler's clock.
#pragma once

#include "exporters/metrics/collector.h"
#include "signals/placement/placement_tracker.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class PlacementCollector : public Collector {
 public:
  // `migrations` is null without the placement probe, `oncpu` without the sched probe (or the
  // sched signal switched off): each family goes with its source. `nodes`: the NUMA nodes'
  // numbers, in the order of the sched tracker's CPU groups.
  PlacementCollector(const PlacementTracker* migrations, const SchedTracker* oncpu,
                     std::vector<uint32_t> nodes, StageResolver* stages);
  std::string_view name() const override { return "placement"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectMigrations(std::vector<prometheus::MetricFamily>* out);
  void CollectNodeTime(std::vector<prometheus::MetricFamily>* out);

  const PlacementTracker* const migrations_;
  const SchedTracker* const oncpu_;
  const std::vector<uint32_t> nodes_;
  StageResolver* const stages_;
};

}  // namespace stagewatch::exporters
