#include "runs/rank_test.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace stagewatch {
namespace {

struct Ranked {
  std::vector<int> doubled_ranks;  // midranks × 2: whole numbers, so sums can index a table
  double tie_term = 0;             // Σ (t³ − t) over groups of t equal values
};

// Midranks of a's values then b's, in the pooled order.
Ranked Rank(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, size_t>> pooled;
  for (size_t i = 0; i < a.size(); ++i) pooled.push_back({a[i], i});
  for (size_t i = 0; i < b.size(); ++i) pooled.push_back({b[i], a.size() + i});
  std::sort(pooled.begin(), pooled.end());
  Ranked r;
  r.doubled_ranks.resize(pooled.size());
  for (size_t lo = 0; lo < pooled.size();) {
    size_t hi = lo;
    while (hi < pooled.size() && pooled[hi].first == pooled[lo].first) ++hi;
    const int doubled = static_cast<int>(lo + 1 + hi);  // (lo + 1) + hi: first + last rank
    for (size_t k = lo; k < hi; ++k) r.doubled_ranks[pooled[k].second] = doubled;
    const double t = static_cast<double>(hi - lo);
    r.tie_term += t * t * t - t;
    lo = hi;
  }
  return r;
}

// P(U ≤ u) and P(U ≥ u) under every way of drawing n1 of the pooled ranks, counted by the sum
// of the drawn (doubled) ranks: exact with ties too.
double ExactP(const Ranked& r, size_t n1, int observed_doubled_sum) {
  const int max_sum = std::accumulate(r.doubled_ranks.begin(), r.doubled_ranks.end(), 0);
  // ways[k][s]: subsets of k ranks seen so far with doubled sum s.
  std::vector<std::vector<double>> ways(n1 + 1, std::vector<double>(max_sum + 1, 0));
  ways[0][0] = 1;
  for (const int rank : r.doubled_ranks) {
    for (size_t k = n1; k >= 1; --k) {
      for (int s = max_sum; s >= rank; --s) ways[k][s] += ways[k - 1][s - rank];
    }
  }
  double total = 0, at_most = 0, at_least = 0;
  for (int s = 0; s <= max_sum; ++s) {
    total += ways[n1][s];
    if (s <= observed_doubled_sum) at_most += ways[n1][s];
    if (s >= observed_doubled_sum) at_least += ways[n1][s];
  }
  return std::min(1.0, 2 * std::min(at_most, at_least) / total);
}

double NormalP(const Ranked& r, double n1, double n2, double u) {
  const double n = n1 + n2;
  const double variance = n1 * n2 / 12 * ((n + 1) - r.tie_term / (n * (n - 1)));
  if (variance <= 0) return 1;  // every value equal
  const double distance = std::max(0.0, std::fabs(u - n1 * n2 / 2) - 0.5);
  return std::min(1.0, std::erfc(distance / std::sqrt(variance) / std::sqrt(2.0)));
}

}  // namespace

RankTestResult MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b,
                            RankTestMethod method) {
  RankTestResult result;
  if (a.empty() || b.empty()) return result;
  const Ranked r = Rank(a, b);
  int doubled_sum = 0;
  for (size_t i = 0; i < a.size(); ++i) doubled_sum += r.doubled_ranks[i];
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  result.u = doubled_sum / 2.0 - n1 * (n1 + 1) / 2;
  result.exact = method == RankTestMethod::kExact ||
                 (method == RankTestMethod::kAuto && a.size() <= kExactRankTestMaxSide &&
                  b.size() <= kExactRankTestMaxSide);
  result.p = result.exact ? ExactP(r, a.size(), doubled_sum) : NormalP(r, n1, n2, result.u);
  return result;
}

}  // namespace stagewatch
