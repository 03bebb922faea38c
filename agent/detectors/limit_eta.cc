#include "detectors/limit_eta.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

namespace stagewatch {
namespace {

using Line = LimitEtaDetector::Line;

// Least squares over (x, y) with x in seconds relative to the newest sample; deviations
// from the means keep the sums well conditioned for values in the 1e10 range.
std::optional<Line> Fit(const std::vector<double>& x, const std::vector<double>& y, size_t begin,
                        size_t end) {
  if (end - begin < 2) return std::nullopt;
  const double n = static_cast<double>(end - begin);
  double mx = 0, my = 0;
  for (size_t i = begin; i < end; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (size_t i = begin; i < end; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx <= 0) return std::nullopt;
  const double slope = sxy / sxx;
  return Line{slope, my - slope * mx};
}

}  // namespace

LimitEtaDetector::LimitEtaDetector(const Config& config)
    : config_(config), window_(config.window) {}

bool LimitEtaDetector::Points(std::vector<double>* x, std::vector<double>* y) const {
  // The fit uses the window proper, not the anchor sample before it. Whole nanoseconds: a
  // Duration's division is the costlier part of a fit.
  const int64_t now_ns = absl::ToUnixNanos(window_.newest().t);
  const int64_t window_ns = absl::ToInt64Nanoseconds(config_.window);
  for (const Sample& s : window_.samples()) {
    const int64_t before_ns = now_ns - absl::ToUnixNanos(s.t);
    if (before_ns > window_ns) continue;
    x->push_back(static_cast<double>(-before_ns) * 1e-9);
    y->push_back(s.value);
  }
  return !x->empty() && x->size() >= config_.min_points &&
         -x->front() >= absl::ToDoubleSeconds(config_.min_span);
}

std::optional<LimitEtaDetector::Line> LimitEtaDetector::WindowLine() const {
  std::vector<double> x, y;
  if (window_.samples().empty() || !Points(&x, &y)) return std::nullopt;
  return Fit(x, y, 0, x.size());
}

std::optional<double> LimitEtaDetector::slope() const {
  if (slope_) return slope_;
  const std::optional<Line> line = WindowLine();
  return line ? std::optional<double>(line->slope) : std::nullopt;
}

std::optional<double> LimitEtaDetector::fitted_usage() const {
  if (fitted_) return fitted_;
  const std::optional<Line> line = WindowLine();
  return line ? std::optional<double>(line->at) : std::nullopt;
}

void LimitEtaDetector::Estimate(std::optional<double> limit) {
  slope_.reset();
  fitted_.reset();
  eta_s_.reset();
  if (!limit || *limit <= 0) return;

  std::vector<double> x, y;
  if (!Points(&x, &y)) return;
  const std::optional<Line> line = Fit(x, y, 0, x.size());
  if (!line) return;
  slope_ = line->slope;
  fitted_ = line->at;
  if (line->slope <= 0) return;

  double peak = y.front(), drop = 0;
  for (double v : y) {
    peak = std::max(peak, v);
    drop = std::max(drop, peak - v);
  }
  if (drop > config_.max_release_fraction * *limit) return;

  const double mid = x.front() / 2;
  const size_t split = std::lower_bound(x.begin(), x.end(), mid) - x.begin();
  const std::optional<Line> older = Fit(x, y, 0, split);
  const std::optional<Line> newer = Fit(x, y, split, x.size());
  if (!older || !newer) return;
  if (older->slope > 0 && newer->slope < config_.min_recent_growth_ratio * older->slope) return;

  eta_s_ = std::max(0.0, (*limit - line->at) / line->slope);
}

bool LimitEtaDetector::Judged(const Sample& usage, double limit,
                              std::optional<AgePoint>* usual) const {
  const absl::Time t = usage.t;
  if (expected_ && !expected_->usual_memory.empty()) {
    // Past its oldest baseline run, a run is compared with the memory they ended with: it has
    // outlived its usual runs, and is still judged at once.
    const double age = std::min(absl::ToDoubleSeconds(t - expected_->start),
                                expected_->usual_memory.back().age_seconds);
    const std::optional<double> bytes = UsualMemoryAt(expected_->usual_memory, age);
    if (bytes && *bytes > 0 && *fitted_ >= config_.above_usual_ratio * *bytes) {
      *usual = AgePoint{age, *bytes};
      return true;
    }
  }
  const absl::Duration age = t - *first_;
  if (age >= config_.warmup) return true;
  // Without a baseline that says so, a kill due before the warm-up ends is judged sooner. On the
  // usage read, not the fit: at the knee of a start-up ramp the line overshoots the level.
  return !expected_ && age >= config_.short_warmup &&
         *eta_s_ < absl::ToDoubleSeconds(config_.warmup - age) &&
         usage.value >= config_.short_warmup_usage_fraction * limit;
}

const DetectorState& LimitEtaDetector::Update(const Sample& usage, std::optional<double> limit) {
  if (!config_.enabled) return state_;
  if (!window_.Add(usage)) return state_;
  if (!first_) first_ = usage.t;
  Estimate(limit);

  const double threshold_s = absl::ToDoubleSeconds(config_.threshold);
  std::optional<AgePoint> usual;
  const bool near = eta_s_ && *eta_s_ < threshold_s &&
                    *fitted_ >= config_.min_usage_fraction * *limit && Judged(usage, *limit, &usual);
  if (near) {
    calm_since_.reset();
    state_.active = true;
    const std::string eta = FormatRoundedDuration(absl::Seconds(*eta_s_));
    if (usual) {
      // "validate at 350 MiB of 400 MiB, 1.6× its usual 220 MiB at 80 s, +4 MiB/s: ..."
      state_.summary = absl::StrFormat(
          "%s run %s at %s of %s, %.1f× its usual %s at %s, +%s/s: the limit in about %s",
          expected_->stage, expected_->run_id, FormatBytes(*fitted_), FormatBytes(*limit),
          *fitted_ / usual->bytes, FormatBytes(usual->bytes),
          FormatRoundedDuration(absl::Seconds(usual->age_seconds)), FormatBytes(*slope_), eta);
    } else {
      state_.summary = absl::StrFormat(
          "memory %s of %s limit (%.0f%%), growing %s/s: limit reached in about %s",
          FormatBytes(*fitted_), FormatBytes(*limit), 100 * *fitted_ / *limit,
          FormatBytes(*slope_), eta);
    }
    return state_;
  }
  if (!state_.active) return state_;
  if (!limit) {
    state_ = DetectorState{};
    return state_;
  }
  if (eta_s_ && *eta_s_ <= 2 * threshold_s) {
    calm_since_.reset();  // between the two thresholds: hysteresis keeps it active
    return state_;
  }
  if (!calm_since_) calm_since_ = usage.t;
  if (usage.t - *calm_since_ >= config_.clear_hold) {
    state_ = DetectorState{};
    calm_since_.reset();
  }
  return state_;
}

}  // namespace stagewatch
