// The two-sided Mann-Whitney U test (Wilcoxon rank-sum): do two sets of runs' figures come from
// the same distribution? It assumes no shape, which suits wall times (skewed, with outliers).
#pragma once

#include <cstddef>
#include <vector>

namespace stagewatch {

enum class RankTestMethod {
  kAuto,    // exact with at most kExactRankTestMaxSide values on each side, else normal
  kExact,   // the permutation distribution of the rank sum, ties included
  kNormal,  // the normal approximation with tie and continuity corrections
};
inline constexpr size_t kExactRankTestMaxSide = 20;

struct RankTestResult {
  double u = 0;  // U of the first set: pairs (a, b) with a > b, plus half the ties
  double p = 1;  // two-sided
  bool exact = false;
};

// Both sets need at least one value; with none, p is 1.
RankTestResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b,
                            RankTestMethod method = RankTestMethod::kAuto);

}  // namespace stagewatch
