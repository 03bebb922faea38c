// Sudden memory climb: a stage's memory grows much faster than it usually does.
//
// The growth rate over a short window is compared with the stage's own baseline of rates
// (time-weighted mean and variance), so a training loop that routinely allocates gigabytes
// is judged against itself, not against a fixed number. Two guards keep it quiet on normal
// behaviour: an absolute floor on the growth (on a flat series the stddev is tiny and any
// wiggle is "many sigmas"), and a warm-up before the baseline is trusted. A stage starting up
// climbs from zero by design, and a variance learns outliers for a long time (after a 6 GiB
// start-up ramp the stddev of the rate stayed high enough to hide a +2 GiB step for over half
// an hour), so the baseline only starts once the stage has settled: at the first window that
// grew less than the floor, or `warmup` after the first sample at the latest. The baseline is
// frozen while the alarm is active, so a long climb never teaches it that climbing is normal.
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/detector.h"

namespace stagewatch {

class MemoryClimbDetector {
 public:
  using Config = MemoryClimbConfig;

  explicit MemoryClimbDetector(const Config& config = {});

  // `usage`: memory in bytes.
  const DetectorState& Update(const Sample& usage);
  const DetectorState& state() const { return state_; }

  // Growth rate over the window in bytes/s, once the window is covered.
  std::optional<double> rate() const { return rate_; }
  const EwmaStats& baseline() const { return baseline_; }

 private:
  void Fire(double growth, double rate);

  Config config_;
  SampleWindow window_;
  EwmaStats baseline_;
  std::optional<absl::Time> first_;
  std::optional<absl::Time> learning_since_;  // when the stage settled
  std::optional<double> rate_;
  std::optional<absl::Time> calm_since_;  // while active: when the rate fell back
  double peak_rate_ = 0;
  DetectorState state_;
};

}  // namespace stagewatch
