#include "detectors/rate_baseline.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

namespace stagewatch {

RateBaselineDetector::RateBaselineDetector(const Config& config)
    : config_(config), window_(config.window), baseline_(config.baseline_half_life) {}

std::optional<double> RateBaselineDetector::Summarise() const {
  // Half a window is enough at start or after a restart; the anchor sample makes it the full
  // window afterwards.
  const absl::Duration covered = window_.covered();
  if (covered < config_.window / 2) return std::nullopt;
  if (config_.input == RateInput::kCounter) return TrimmedRate();
  std::vector<double> values;
  for (const Sample& s : window_.samples()) {
    if (s.t >= window_.newest().t - config_.window) values.push_back(s.value);
  }
  const auto mid = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(values.begin(), mid)) / 2;
}

double RateBaselineDetector::TrimmedRate() const {
  struct Interval {
    double seconds, delta;
  };
  std::vector<Interval> intervals;
  const auto& samples = window_.samples();
  for (size_t i = 1; i < samples.size(); ++i) {
    intervals.push_back({absl::ToDoubleSeconds(samples[i].t - samples[i - 1].t),
                         samples[i].value - samples[i - 1].value});
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.delta * b.seconds > b.delta * a.seconds;  // busiest first
  });
  double budget = config_.trim_fraction * absl::ToDoubleSeconds(window_.covered());
  double seconds = 0, delta = 0;
  for (const Interval& interval : intervals) {
    if (seconds == 0 && interval.seconds <= budget) {  // still trimming from the top
      budget -= interval.seconds;
      continue;
    }
    seconds += interval.seconds;
    delta += interval.delta;
  }
  return seconds > 0 ? delta / seconds : 0;
}

const DetectorState& RateBaselineDetector::Update(const Sample& sample) {
  if (!config_.enabled) return state_;
  const std::optional<absl::Time> previous =
      window_.empty() ? std::nullopt : std::optional(window_.newest().t);
  if (config_.input == RateInput::kCounter && !window_.empty() &&
      sample.value < window_.newest().value && sample.t > window_.newest().t) {
    window_.Clear();
  }
  if (!window_.Add(sample)) return state_;
  if (!first_) first_ = sample.t;

  signal_ = Summarise();
  if (!signal_) return state_;
  const double signal = *signal_;
  if (!learning_since_ && (signal <= config_.min_level || sample.t - *first_ >= config_.warmup)) {
    learning_since_ = sample.t;
  }
  if (!learning_since_) return state_;  // still starting up: neither learn nor judge

  const double mean = baseline_.mean();
  const double sd = baseline_.stddev();

  if (!state_.active) {
    const double threshold = std::max(config_.min_level, mean + config_.k * sd);
    const bool warm = sample.t - *learning_since_ >= config_.warmup;
    if (warm && signal > threshold) {
      Fire(signal, threshold);
    } else {
      baseline_.Add(signal, previous ? sample.t - *previous : absl::ZeroDuration());
    }
    return state_;
  }

  const double clear_level = std::max(config_.min_level / 2, mean + config_.k / 2 * sd);
  if (signal >= clear_level) {
    calm_since_.reset();
    if (signal > peak_) Fire(signal, std::max(config_.min_level, mean + config_.k * sd));
  } else {
    if (!calm_since_) calm_since_ = sample.t;
    if (sample.t - *calm_since_ >= config_.clear_hold) {
      state_ = DetectorState{};
      calm_since_.reset();
      peak_ = 0;
    }
  }
  return state_;
}

std::string RateBaselineDetector::Format(double v) const {
  if (config_.unit == RateUnit::kSeconds) {
    if (std::fabs(v) >= 1) return absl::StrFormat("%.2f s", v);
    if (std::fabs(v) >= 1e-3) return absl::StrFormat("%.1f ms", v * 1e3);
    return absl::StrFormat("%.0f us", v * 1e6);
  }
  if (std::fabs(v) >= 10) return absl::StrFormat("%.0f/s", v);
  return absl::StrFormat("%.1f/s", v);
}

void RateBaselineDetector::Fire(double signal, double threshold) {
  state_.active = true;
  peak_ = signal;
  const char* how = config_.input == RateInput::kCounter ? "rate" : "median";
  state_.summary =
      absl::StrFormat("%s at %s (%s over %s; usual %s ± %s, threshold %s)", config_.what,
                      Format(signal), how, FormatRoundedDuration(window_.covered()),
                      Format(baseline_.mean()), Format(baseline_.stddev()), Format(threshold));
}

}  // namespace stagewatch
