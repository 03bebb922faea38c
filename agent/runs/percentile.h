// Nearest-rank percentile, the one definition the launcher, verdicts and advisor share, and the
// median.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace stagewatch {

// The smallest value with at least p (in (0, 1]) of the values at or below it; 0 for none.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, double(values.size()))) - 1;
  return values[index];
}

// The middle value, or the mean of the two middle values; 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace stagewatch
