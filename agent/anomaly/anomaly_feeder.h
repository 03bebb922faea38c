// Feeds the anomaly engine on the memory sampler's clock: memory and pressure from the
// sample, major faults and run-queue latency from the trackers, collected there and then.
#pragma once

#include <map>

#include "anomaly/anomaly_engine.h"
#include "memory/memory_sampler.h"
#include "memory/memory_tracker.h"
#include "sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

class AnomalyFeeder {
 public:
  // `memory` and `sched` may be null (probe off or not loaded): their detectors then idle.
  AnomalyFeeder(AnomalyEngine* engine, StageResolver* stages, MemoryTracker* memory,
                SchedTracker* sched)
      : engine_(engine), stages_(stages), memory_(memory), sched_(sched) {}

  // `sampled` is the sampler's snapshot of `now`: its memory part feeds the memory detectors.
  void Feed(absl::Time now, const Snapshot& sampled);

 private:
  AnomalyEngine* const engine_;
  StageResolver* const stages_;
  MemoryTracker* const memory_;
  SchedTracker* const sched_;
};

}  // namespace stagewatch
