#include "detectors/memory_climb.h"

#include "absl/strings/str_format.h"

namespace stagewatch {

MemoryClimbDetector::MemoryClimbDetector(const Config& config)
    : config_(config), window_(config.window), baseline_(config.baseline_half_life) {}

const DetectorState& MemoryClimbDetector::Update(const Sample& usage) {
  if (!config_.enabled) return state_;
  const std::optional<absl::Time> previous =
      window_.empty() ? std::nullopt : std::optional(window_.newest().t);
  if (!window_.Add(usage)) return state_;
  if (!first_) first_ = usage.t;

  // A rate over less than the full window is noisier than the baseline's rates; only the
  // first seconds lack it, and they are inside the warm-up anyway.
  rate_.reset();
  if (window_.covered() < config_.window) return state_;
  const double growth = window_.newest().value - window_.oldest().value;
  const double rate = growth / absl::ToDoubleSeconds(window_.covered());
  rate_ = rate;

  if (!learning_since_ &&
      (growth < config_.min_growth_bytes || usage.t - *first_ >= config_.warmup)) {
    learning_since_ = usage.t;
  }
  if (!learning_since_) return state_;  // still starting up: neither learn nor judge

  const double mean = baseline_.mean();
  const double sd = baseline_.stddev();
  if (!state_.active) {
    const bool warm = usage.t - *learning_since_ >= config_.warmup;
    if (warm && growth >= config_.min_growth_bytes && rate > mean + config_.k * sd) {
      Fire(growth, rate);
    } else {
      baseline_.Add(rate, previous ? usage.t - *previous : absl::ZeroDuration());
    }
    return state_;
  }

  // Active: the baseline stays frozen; keep the summary at the peak, it says the most.
  const bool still_high =
      growth >= config_.min_growth_bytes / 2 && rate > mean + config_.k / 2 * sd;
  if (still_high) {
    calm_since_.reset();
    if (rate > peak_rate_) Fire(growth, rate);
  } else {
    if (!calm_since_) calm_since_ = usage.t;
    if (usage.t - *calm_since_ >= config_.clear_hold) {
      state_ = DetectorState{};
      calm_since_.reset();
      peak_rate_ = 0;
    }
  }
  return state_;
}

void MemoryClimbDetector::Fire(double growth, double rate) {
  constexpr double kMiB = 1024.0 * 1024;
  state_.active = true;
  peak_rate_ = rate;
  state_.summary =
      absl::StrFormat("memory grew %s in %s (%.1f MiB/s; usual rate %.1f ± %.1f MiB/s)",
                      FormatBytes(growth), FormatRoundedDuration(window_.covered()), rate / kMiB,
                      baseline_.mean() / kMiB, baseline_.stddev() / kMiB);
}

}  // namespace stagewatch
