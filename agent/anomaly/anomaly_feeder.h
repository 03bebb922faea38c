// Feeds the anomaly engine on the memory sampler's clock: memory and pressure from each
// sample, then whatever the signals feed it from their trackers (RunningSignals::anomaly_feeds:
// major faults, run-queue latency), then lets the engine judge.
#pragma once

#include <vector>

#include "anomaly/anomaly_engine.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_directory.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

// Fed with the stages known at the sample (`known`).
using AnomalyFeed = std::function<void(absl::Time now, const StageDirectory& known)>;

class AnomalyFeeder {
 public:
  AnomalyFeeder(AnomalyEngine* engine, StageResolver* stages, std::vector<AnomalyFeed> feeds)
      : engine_(engine), stages_(stages), feeds_(std::move(feeds)) {}

  // `sampled` is the sampler's snapshot of `now`: its memory part feeds the memory detectors.
  void Feed(absl::Time now, const Snapshot& sampled);

 private:
  AnomalyEngine* const engine_;
  StageResolver* const stages_;
  const std::vector<AnomalyFeed> feeds_;
};

}  // namespace stagewatch
