#include "detectors/run_pace.h"

#include <algorithm>

namespace stagewatch {

absl::Time ProjectedEnd(const RunExpectation& expected, const RunPace& pace) {
  const absl::Time now = expected.start + absl::Seconds(pace.age_seconds);
  if (expected.median_cpu_seconds && pace.cpu_seconds && *pace.cpu_seconds > 0 &&
      pace.age_seconds > 0) {
    const double rate = *pace.cpu_seconds / pace.age_seconds;  // CPUs busy, on average
    const double left = std::max(0.0, *expected.median_cpu_seconds - *pace.cpu_seconds);
    return now + absl::Seconds(left / rate);
  }
  return std::max(now, expected.start + absl::Seconds(expected.median_wall_seconds));
}

PaceVerdict JudgePace(const SlowRunConfig& config, const RunExpectation& expected,
                      const RunPace& pace, std::optional<absl::Time> deadline) {
  PaceVerdict v;
  if (!config.enabled || expected.median_wall_seconds <= 0) return v;
  v.ratio = pace.age_seconds / expected.median_wall_seconds;
  v.slow = pace.age_seconds > expected.p90_wall_seconds && v.ratio >= config.min_ratio;
  v.projected_end = ProjectedEnd(expected, pace);
  v.late = deadline.has_value() && v.projected_end > *deadline;
  return v;
}

}  // namespace stagewatch
