// Runs the agent's work on the memory sampler's clock, after each snapshot: feeds the anomaly
// engine memory and pressure from it, runs each signal's hook (RunningSignals::sample_hooks:
// collecting its tracker for its collector, feeding its detectors major faults or run-queue
// latency), then lets the engine judge.
#pragma once

#include <memory>
#include <vector>

#include "anomaly/anomaly_engine.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_directory.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

// Run with the stages known at the sample (`known`).
using SampleHook = std::function<void(absl::Time now, const StageDirectory& known)>;

class AnomalyFeeder {
 public:
  AnomalyFeeder(AnomalyEngine* engine, StageResolver* stages, std::vector<SampleHook> hooks)
      : engine_(engine), stages_(stages), hooks_(std::move(hooks)) {}

  // `sampled` is the sampler's snapshot of `now`: its memory part feeds the memory detectors.
  // Called from one thread (the sampler's).
  void Feed(absl::Time now, const Snapshot& sampled);

 private:
  AnomalyEngine* const engine_;
  StageResolver* const stages_;
  const std::vector<SampleHook> hooks_;
  // The known stages as of stages_version() known_version_.
  std::unique_ptr<const StageDirectory> known_;
  uint64_t known_version_ = 0;
  std::vector<MemoryDomainSample> domains_;  // a stage's, its room kept for the next
};

}  // namespace stagewatch
