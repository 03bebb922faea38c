// Common parts of the anomaly detectors: pure logic over one stage's time series.
//
// A detector is fed the samples of ONE stage's series in time order and says whether its
// anomaly is active, with a line of text for humans. Detectors do no I/O and keep bounded
// state (a window of samples, a few running statistics), so the agent can run one per stage
// and signal on every collection. Out-of-order and non-finite samples are ignored rather
// than trusted: a detector that learns from a bad sample could page on it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <string>

#include "absl/time/time.h"
#include "units.h"  // FormatBytes, for the summaries

namespace stagewatch {

struct Sample {
  absl::Time t;
  double value = 0;
};

struct DetectorState {
  bool active = false;
  std::string summary;  // human text with figures; empty while inactive
};

// Exponentially weighted mean and variance with a half-life in time, not in samples, so a
// baseline means the same whatever the collection interval. Each sample weighs at least
// 1/n (n = samples seen): until the decay takes over the statistics are a plain average.
// Without that the first value would dominate for several half-lives and the variance would
// start near zero, which makes the first minutes after warm-up trigger-happy.
class EwmaStats {
 public:
  explicit EwmaStats(absl::Duration half_life) : half_life_s_(absl::ToDoubleSeconds(half_life)) {}

  // `dt`: time since the previous sample of the series.
  void Add(double x, absl::Duration dt) {
    ++count_;
    const double dt_s = std::max(0.0, absl::ToDoubleSeconds(dt));
    const double decay = half_life_s_ > 0 ? 1 - std::exp2(-dt_s / half_life_s_) : 1.0;
    const double alpha = std::max(decay, 1.0 / static_cast<double>(count_));
    // West's incremental form: exact population variance while alpha = 1/n.
    const double diff = x - mean_;
    const double step = alpha * diff;
    mean_ += step;
    variance_ = (1 - alpha) * (variance_ + diff * step);
  }

  double mean() const { return mean_; }
  double stddev() const { return std::sqrt(std::max(0.0, variance_)); }
  size_t count() const { return count_; }

 private:
  double half_life_s_;
  size_t count_ = 0;
  double mean_ = 0;
  double variance_ = 0;
};

// The samples of the last `span`, plus the newest one at or before the span's start (the
// anchor), so a difference taken across the window covers the whole span once history
// allows, whatever the sampling interval.
class SampleWindow {
 public:
  explicit SampleWindow(absl::Duration span) : span_(span) {}

  // False (and the sample dropped) when it is not finite or not newer than the last one.
  bool Add(const Sample& s) {
    if (!std::isfinite(s.value)) return false;
    if (!samples_.empty() && s.t <= samples_.back().t) return false;
    samples_.push_back(s);
    const absl::Time start = s.t - span_;
    while (samples_.size() >= 2 && samples_[1].t <= start) samples_.pop_front();
    return true;
  }

  void Clear() { samples_.clear(); }
  bool empty() const { return samples_.empty(); }
  const Sample& oldest() const { return samples_.front(); }
  const Sample& newest() const { return samples_.back(); }
  absl::Duration covered() const {
    return samples_.empty() ? absl::ZeroDuration() : newest().t - oldest().t;
  }
  const std::deque<Sample>& samples() const { return samples_; }

 private:
  absl::Duration span_;
  std::deque<Sample> samples_;
};

// Durations rounded to the second ("9m40s"): finer digits are noise in an alert.
inline std::string FormatRoundedDuration(absl::Duration d) {
  return absl::FormatDuration(absl::Seconds(std::round(absl::ToDoubleSeconds(d))));
}

}  // namespace stagewatch
