#include "detectors/pressure_spike.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace stagewatch {

PressureSpikeDetector::PressureSpikeDetector(const Config& config)
    : config_(config), window_(config.window) {}

const DetectorState& PressureSpikeDetector::Update(const Sample& full_total) {
  if (!config_.enabled) return state_;
  if (!window_.empty() && full_total.value < window_.newest().value &&
      full_total.t > window_.newest().t) {
    window_.Clear();
  }
  if (!window_.Add(full_total)) return state_;

  // Half a window is enough to judge at start or after a reset; the anchor sample makes it
  // the full window afterwards.
  fraction_.reset();
  const absl::Duration covered = window_.covered();
  if (covered < config_.window / 2) return state_;
  // Clamped: the counter and the clock are read at slightly different instants.
  const double fraction = std::clamp(
      (window_.newest().value - window_.oldest().value) / absl::ToDoubleSeconds(covered), 0.0, 1.0);
  fraction_ = fraction;

  if (fraction > config_.threshold) {
    if (!above_since_) above_since_ = full_total.t;
  } else {
    above_since_.reset();
  }

  if (!state_.active) {
    if (!above_since_ || full_total.t - *above_since_ < config_.sustain) return state_;
    state_.active = true;
    peak_ = 0;
  } else if (fraction < config_.threshold * config_.clear_ratio) {
    state_ = DetectorState{};
    return state_;
  }
  if (fraction > peak_) {
    peak_ = fraction;
    state_.summary =
        absl::StrFormat("all tasks stalled on memory %.0f%% of the time over %s (threshold %.0f%%)",
                        100 * fraction, FormatRoundedDuration(covered), 100 * config_.threshold);
  }
  return state_;
}

}  // namespace stagewatch
