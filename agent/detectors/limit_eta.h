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
// With a run's expectation (its stage's usual memory at each age, detectors/run_expectation.h)
// there is no warm-up: a run whose fitted usage is well above the usual at the same age and
// nears its limit is a run unlike its stage's clean ones, and is judged from its first fit.
// Without one, a domain whose ETA is shorter than what is left of the warm-up is judged after
// the shorter `short_warmup`, once near its limit (`short_warmup_usage_fraction`): waiting out
// the warm-up would page only after the kill.
//
// Feed the working set (usage minus inactive file cache, as cAdvisor's working_set_bytes),
// not raw usage: page cache fills a cgroup up to its limit by design and is reclaimed there.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/detector.h"
#include "detectors/run_expectation.h"

namespace stagewatch {

class LimitEtaDetector {
 public:
  using Config = LimitEtaConfig;

  explicit LimitEtaDetector(const Config& config = {});

  // `usage` in bytes; `limit` in bytes, none when the stage has no memory limit.
  const DetectorState& Update(const Sample& usage, std::optional<double> limit);
  const DetectorState& state() const { return state_; }
  // Judges the domain, a run's cgroup, against its stage's usual runs from now on.
  void Expect(RunExpectation expected) { expected_ = std::move(expected); }

  // Seconds until the fitted usage reaches the limit (0 when already there); none when
  // there is no limit, too little data, or usage is not steadily growing.
  std::optional<double> EtaSeconds() const { return eta_s_; }
  // The fit's slope in bytes/s and its usage at the newest sample, once there is a fit. Where
  // the last update had no limit, fitted when asked: no line is drawn every sample for a stage
  // that has nothing to forecast.
  std::optional<double> slope() const;
  std::optional<double> fitted_usage() const;

  struct Line {
    double slope;  // per second
    double at;     // value at x = 0 (the newest sample)
  };

 private:
  // The window's points, x in seconds before the newest sample; false when too few or too
  // short a span to fit.
  bool Points(std::vector<double>* x, std::vector<double>* y) const;
  std::optional<Line> WindowLine() const;
  void Estimate(std::optional<double> limit);
  // Whether the domain is judged at `usage` (past its warm-up, or above its usual at its age), and
  // the usual memory it was compared with and the age it was read at, if any.
  bool Judged(const Sample& usage, double limit, std::optional<AgePoint>* usual) const;

  Config config_;
  SampleWindow window_;
  std::optional<absl::Time> first_;
  std::optional<double> slope_;
  std::optional<double> fitted_;
  std::optional<double> eta_s_;
  std::optional<absl::Time> calm_since_;
  std::optional<RunExpectation> expected_;
  DetectorState state_;
};

}  // namespace stagewatch
