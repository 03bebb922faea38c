#include "detectors/run_expectation.h"

#include <algorithm>

namespace stagewatch {

std::optional<double> UsualMemoryAt(const std::vector<AgePoint>& curve, double age_seconds) {
  if (curve.empty() || age_seconds < curve.front().age_seconds ||
      age_seconds > curve.back().age_seconds) {
    return std::nullopt;
  }
  auto after = std::lower_bound(
      curve.begin(), curve.end(), age_seconds,
      [](const AgePoint& p, double age) { return p.age_seconds < age; });
  if (after->age_seconds == age_seconds || after == curve.begin()) return after->bytes;
  const AgePoint& a = *(after - 1);
  const AgePoint& b = *after;
  const double share = (age_seconds - a.age_seconds) / (b.age_seconds - a.age_seconds);
  return a.bytes + share * (b.bytes - a.bytes);
}

}  // namespace stagewatch
