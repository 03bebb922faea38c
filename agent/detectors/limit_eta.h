// Time to limit: when will a stage's memory reach its cgroup limit at the current trend?
//
// A least-squares line through the usage of a sliding window gives the trend; the time to
// limit is the headroom left under the fitted line divided by its slope. A line is only a
// forecast when usage is really trending, so the estimate is withheld (no ETA, never an
// "infinite" one) when:
//   - there is no limit, or the slope is not positive;
//   - usage dropped by a large share of the limit inside the window: memory is being
//     released (a training loop's periodic allocation), and a line through a sawtooth points
//     at a limit its peaks never reach;
//   - the newer half of the window grows at less than a set share of the older half's rate:
//     the growth is levelling off (a stage that just started up and reached its working size).
//
// Feed the working set (usage minus inactive file cache, as cAdvisor's working_set_bytes),
// not raw usage: page cache fills a cgroup up to its limit by design and is reclaimed there.
#pragma once

#include <cstddef>
#include <optional>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/detector.h"

namespace stagewatch {

class LimitEtaDetector {
 public:
  using Config = LimitEtaConfig;

  explicit LimitEtaDetector(const Config& config = {});

  // `usage` in bytes; `limit` in bytes, none when the stage has no memory limit.
  const DetectorState& Update(const Sample& usage, std::optional<double> limit);
  const DetectorState& state() const { return state_; }

  // Seconds until the fitted usage reaches the limit (0 when already there); none when
  // there is no limit, too little data, or usage is not steadily growing.
  std::optional<double> EtaSeconds() const { return eta_s_; }
  // The fit's slope in bytes/s and its usage at the newest sample, once there is a fit.
  std::optional<double> slope() const { return slope_; }
  std::optional<double> fitted_usage() const { return fitted_; }

 private:
  void Estimate(std::optional<double> limit);

  Config config_;
  SampleWindow window_;
  std::optional<absl::Time> first_;
  std::optional<double> slope_;
  std::optional<double> fitted_;
  std::optional<double> eta_s_;
  std::optional<absl::Time> calm_since_;
  DetectorState state_;
};

}  // namespace stagewatch
