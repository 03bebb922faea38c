// Collector "sched": CPU contention per stage, as the sched tracker last folded the probe's
// maps, and cpu.stat and cpu.pressure from the sampler's snapshot (its CPU part). It reads
// nothing itself: both are made on the sampler's clock.
#pragma once

#include "exporters/metrics/collector.h"
#include "sampler/memory_sampler.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class SchedCollector : public Collector {
 public:
  // `tracker` is null without the sched probe: the snapshot's half still runs.
  SchedCollector(const SchedTracker* tracker, StageResolver* stages, MemorySampler* sampler);
  std::string_view name() const override { return "sched"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectKernel(std::vector<prometheus::MetricFamily>* out);
  absl::Status CollectSnapshot(const std::vector<Stage>& stages,
                               std::vector<prometheus::MetricFamily>* out);

  const SchedTracker* const tracker_;
  StageResolver* const stages_;
  MemorySampler* const sampler_;
};

}  // namespace stagewatch::exporters
