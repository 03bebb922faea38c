#include "runs/rank_test.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

// The example of SciPy's mannwhitneyu documentation (ages of male and female workers):
// U = 17, exact p = 0.1111 (= 2 × 7/126), asymptotic p = 0.11134688653314041.
const std::vector<double> kMales = {19, 22, 16, 29, 24};
const std::vector<double> kFemales = {20, 11, 17, 12};

TEST(RankTest, ExactPOfTheTextbookExample) {
  const RankTestResult r = MannWhitneyU(kMales, kFemales);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 17);
  EXPECT_NEAR(r.p, 1.0 / 9, 1e-12);
}

TEST(RankTest, NormalApproximationOfTheTextbookExample) {
  const RankTestResult r = MannWhitneyU(kMales, kFemales, RankTestMethod::kNormal);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 17);
  EXPECT_NEAR(r.p, 0.11134688653314041, 1e-12);
}

TEST(RankTest, TheOrderOfTheSetsOnlyMirrorsU) {
  const RankTestResult r = MannWhitneyU(kFemales, kMales);
  EXPECT_DOUBLE_EQ(r.u, 3);  // 5 × 4 − 17
  EXPECT_NEAR(r.p, 1.0 / 9, 1e-12);
}

TEST(RankTest, FiveRunsEachFullySeparatedGiveTwoIn252) {
  // Only 2 of the C(10, 5) = 252 splits are as extreme: all lower or all higher.
  const RankTestResult r = MannWhitneyU({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.p, 2.0 / 252, 1e-12);
}

// Reference values by brute force over every split of the pooled values, ties at their midrank
// (462 splits; 0.12554 = 58/462), and the tie-corrected normal formula: z = (|U − n1n2/2| −
// 0.5) / σ, σ² = n1n2/12 × (N + 1 − Σ(t³ − t)/(N(N − 1))).
TEST(RankTest, TiesTakeTheirMidrankInBothMethods) {
  const std::vector<double> a = {1, 2, 2, 3, 5}, b = {2, 3, 4, 4, 6, 7};
  const RankTestResult exact = MannWhitneyU(a, b);
  EXPECT_TRUE(exact.exact);
  EXPECT_DOUBLE_EQ(exact.u, 6.5);
  EXPECT_NEAR(exact.p, 58.0 / 462, 1e-12);
  EXPECT_NEAR(MannWhitneyU(a, b, RankTestMethod::kNormal).p, 0.13862587987892772, 1e-12);
}

TEST(RankTest, MoreThanTwentyASideUsesTheNormalApproximation) {
  std::vector<double> a, b;
  for (int i = 0; i < 25; ++i) a.push_back(i % 7);
  for (int i = 0; i < 22; ++i) b.push_back(i % 5 + 2);
  const RankTestResult r = MannWhitneyU(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 184);
  EXPECT_NEAR(r.p, 0.05072584529461939, 1e-12);
}

TEST(RankTest, AllEqualOrEmptyIsNoEvidence) {
  EXPECT_DOUBLE_EQ(MannWhitneyU({3, 3}, {3, 3, 3}).p, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyU({3, 3}, {3, 3, 3}, RankTestMethod::kNormal).p, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyU({}, {1, 2}).p, 1);
}

}  // namespace
}  // namespace stagewatch
