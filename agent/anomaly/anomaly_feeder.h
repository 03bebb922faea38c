// Feeds the anomaly engine on the memory sampler's clock: memory and pressure from each
// sample, major faults from the memory tracker collected there and then (when any cgroup had
// one since its last collection: MemoryTracker::CollectForMajorFaults), and run-queue
// latency from the sched tracker, collected on every sample at least kRunqFeedInterval after
// the last it was collected for.
#pragma once

#include <map>

#include "anomaly/anomaly_engine.h"
#include "sampler/memory_sampler.h"
#include "signals/memory/memory_tracker.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

// The CPU-starvation detector judges the run-queue p99 over a 30 s window by its median
// (anomalies.cpu_starvation), so a few seconds between its points lose nothing
// (DetectorQualityTest at this cadence), while collecting the sched tracker's BPF maps (every
// cgroup's entry and every preemption pair, named and folded per stage) every second was a
// quarter of an idle agent's CPU. At least this long between two collections: every third
// sample at the default 1 s interval (the half second absorbs the samples' jitter). The
// fault-storm detector keeps every sample: it trims lone bursts out of its window by whole
// sampling intervals, which coarser points would not leave room for.
inline constexpr absl::Duration kRunqFeedInterval = absl::Milliseconds(2500);

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
  absl::Time runq_fed_ = absl::InfinitePast();
};

}  // namespace stagewatch
