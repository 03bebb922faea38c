// A signal far above its own baseline: the shared core of the fault-storm and CPU-starvation
// detectors.
//
// The signal is either the rate of a cumulative counter over a window (major faults/s) or a
// gauge summarised over the window by its median (p99 run-queue latency computed by the
// caller: a p99 over one collection interval is spiky, and the median ignores lone spikes
// that say nothing about starvation). The counter's rate leaves out the busiest
// `trim_fraction` of the window's time, for the same reason: a lone burst (a file paged in at
// once) is not a storm, and it breaks the mean + k * stddev model, since against a baseline of
// mostly quiet windows one burst is "8 sigma". It fires when the signal exceeds
// max(min_level, mean + k * stddev) of its own time-weighted baseline: the baseline term
// adapts to stages that are always busy, the floor keeps quiet stages from paging on a
// change that is large in sigmas but harmless in absolute terms. The baseline is frozen
// while active and not trusted during the warm-up. As for the memory climb, it only starts
// learning once the stage has settled (a start-up pages its binary and data in): at the first
// signal at or below `min_level`, or `warmup` after the first sample at the latest.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/detector.h"

namespace stagewatch {

class RateBaselineDetector {
 public:
  using Config = RateBaselineConfig;

  explicit RateBaselineDetector(const Config& config = {});

  // A counter that goes down (the cgroup was recreated, the agent's source restarted) is a
  // restart: the window starts again from it; no negative rate is ever computed.
  const DetectorState& Update(const Sample& sample);
  const DetectorState& state() const { return state_; }

  // The signal over the window, once half of it is covered.
  std::optional<double> signal() const { return signal_; }
  const EwmaStats& baseline() const { return baseline_; }

 private:
  std::optional<double> Summarise() const;
  double TrimmedRate() const;
  std::string Format(double v) const;
  void Fire(double signal, double threshold);

  Config config_;
  SampleWindow window_;
  EwmaStats baseline_;
  std::optional<absl::Time> first_;
  std::optional<absl::Time> learning_since_;  // when the stage settled
  std::optional<double> signal_;
  std::optional<absl::Time> calm_since_;
  double peak_ = 0;
  DetectorState state_;
};

}  // namespace stagewatch
