// Collector "sched": CPU contention per stage, from the sched probe, and cpu.stat and
// cpu.pressure from the sampler's snapshot (its CPU part).
#pragma once

#include "exporters/metrics/collector.h"
#include "sampler/memory_sampler.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class SchedCollector : public Collector {
 public:
  // `tracker` and `probe` are null without the sched probe: the snapshot's half still runs.
  SchedCollector(SchedTracker* tracker, SchedProbe* probe, StageResolver* stages,
                 MemorySampler* sampler);
  std::string_view name() const override { return "sched"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectKernel(std::vector<prometheus::MetricFamily>* out);
  absl::Status CollectSnapshot(const std::vector<Stage>& stages,
                               std::vector<prometheus::MetricFamily>* out);

  SchedTracker* const tracker_;
  SchedProbe* const probe_;
  StageResolver* const stages_;
  MemorySampler* const sampler_;
};

}  // namespace stagewatch::exporters
