// Pressure spike: the stage's tasks spend a large share of wall time fully stalled on memory.
//
// Fed the cumulative memory PSI "full" total (cgroup v2 memory.pressure, in seconds): the
// time during which all non-idle tasks of the cgroup were stalled waiting for memory
// (reclaim, swap-in, refaults). Its rate over a window is the share of wall time stalled,
// 0..1. Unlike the memory climb there is no learned baseline: being stalled is bad whatever
// the stage usually does, so a fixed threshold is what an SRE expects. It must hold for a
// while to fire (one slow reclaim is not a spike) and clears below half of it.
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/detector.h"

namespace stagewatch {

class PressureSpikeDetector {
 public:
  using Config = PressureSpikeConfig;

  explicit PressureSpikeDetector(const Config& config = {});

  // `full_total`: cumulative seconds stalled. A total that goes down (the cgroup was
  // recreated) restarts the window; no negative rate is ever computed.
  const DetectorState& Update(const Sample& full_total);
  const DetectorState& state() const { return state_; }

  // Share of wall time stalled over the window, once half of it is covered.
  std::optional<double> stall_fraction() const { return fraction_; }

 private:
  Config config_;
  SampleWindow window_;
  std::optional<double> fraction_;
  std::optional<absl::Time> above_since_;
  double peak_ = 0;
  DetectorState state_;
};

}  // namespace stagewatch
