// A running run judged against its stage's usual runs: the usual memory at each age from the
// baseline runs' series, the early limit-ETA page it allows, and the slower-than-usual pace
// (p90 wall time, a pipeline's deadline at the run's pace).
#include <optional>
#include <vector>

#include "detectors/limit_eta.h"
#include "detectors/run_expectation.h"
#include "detectors/run_pace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/run_expectation_of.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;

constexpr double kMiB = 1024.0 * 1024;
const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

RunMemorySeries Series(std::vector<std::pair<double, double>> age_mib) {
  RunMemorySeries s{.start = kStart};
  for (auto [age, mib] : age_mib) {
    s.samples.push_back({.at = kStart + absl::Seconds(age),
                         .memory_bytes = static_cast<uint64_t>(mib * kMiB)});
  }
  return s;
}

TEST(UsualMemoryAtTest, InterpolatesBetweenPointsAndKnowsNothingOutsideThem) {
  const std::vector<AgePoint> curve = {{0, 0}, {10, 100}, {20, 300}};
  EXPECT_DOUBLE_EQ(*UsualMemoryAt(curve, 5), 50);
  EXPECT_DOUBLE_EQ(*UsualMemoryAt(curve, 10), 100);
  EXPECT_DOUBLE_EQ(*UsualMemoryAt(curve, 15), 200);
  EXPECT_FALSE(UsualMemoryAt(curve, 21));
  EXPECT_FALSE(UsualMemoryAt(curve, -1));
  EXPECT_FALSE(UsualMemoryAt({}, 0));
}

TEST(UsualMemoryByAgeTest, TheMedianRunAtEachAgeSoOneOddRunMovesNothing) {
  // Three runs at 10 MiB/s; one of them twice as high: the median is the usual one.
  const std::vector<AgePoint> curve = UsualMemoryByAge(
      {Series({{0, 0}, {10, 100}, {20, 200}}), Series({{0, 0}, {10, 100}, {20, 200}}),
       Series({{0, 0}, {10, 200}, {20, 400}})},
      /*max_points=*/21);
  ASSERT_EQ(curve.size(), 21u);
  EXPECT_DOUBLE_EQ(curve.back().age_seconds, 20);
  EXPECT_NEAR(*UsualMemoryAt(curve, 10), 100 * kMiB, 1);
  EXPECT_NEAR(*UsualMemoryAt(curve, 15), 150 * kMiB, 1);
}

TEST(UsualMemoryByAgeTest, PastAShorterRunTheLongerOnesCount) {
  const std::vector<AgePoint> curve = UsualMemoryByAge(
      {Series({{0, 100}, {10, 100}}), Series({{0, 100}, {30, 400}})}, /*max_points=*/4);
  ASSERT_EQ(curve.size(), 4u);
  EXPECT_NEAR(curve[3].bytes, 400 * kMiB, 1);       // age 30: only the longer run
  EXPECT_NEAR(curve[1].bytes, 150 * kMiB, 1);       // age 10: median of 100 and 200
  EXPECT_TRUE(UsualMemoryByAge({Series({})}).empty());  // no memory points, no curve
}

LimitEtaConfig FastEta() {
  LimitEtaConfig c;
  c.min_span = absl::Seconds(5);
  c.min_points = 5;
  c.window = absl::Seconds(10);
  return c;  // warmup 2 min, short_warmup 30 s: the defaults
}

// A run climbing 4 MiB/s from 100 MiB into a 400 MiB limit (killed at 75 s): the first age at
// which the detector fires, or none.
std::optional<int> FirstAlarm(LimitEtaDetector& eta) {
  for (int age = 0; age <= 75; ++age) {
    const double usage = (100 + 4.0 * age) * kMiB;
    if (eta.Update({kStart + absl::Seconds(age), usage}, 400 * kMiB).active) return age;
  }
  return std::nullopt;
}

RunExpectation UsuallyFlatAt(double mib) {
  return RunExpectation{.run_id = "r-7",
                        .stage = "validate",
                        .start = kStart,
                        .baseline_runs = 3,
                        .usual_memory = {{0, mib * kMiB}, {300, mib * kMiB}},
                        .median_wall_seconds = 300,
                        .p90_wall_seconds = 310};
}

TEST(LimitEtaEarlyTest, WithoutABaselineAShortClimbWaitsOnlyTheShortWarmup) {
  LimitEtaDetector eta(FastEta());
  const std::optional<int> at = FirstAlarm(eta);
  ASSERT_TRUE(at);
  EXPECT_GE(*at, 30);  // short_warmup
  EXPECT_LT(*at, 75);  // before the kill
  EXPECT_THAT(eta.state().summary, HasSubstr("limit reached in about"));
}

TEST(LimitEtaEarlyTest, TheFullWarmupAloneWouldMissTheKill) {
  LimitEtaConfig c = FastEta();
  c.short_warmup = c.warmup;  // no shortening: as before
  LimitEtaDetector eta(c);
  EXPECT_FALSE(FirstAlarm(eta));
}

TEST(LimitEtaEarlyTest, ARunAboveItsUsualMemoryIsJudgedWithoutWarmup) {
  LimitEtaDetector eta(FastEta());
  eta.Expect(UsuallyFlatAt(150));
  const std::optional<int> at = FirstAlarm(eta);
  ASSERT_TRUE(at);
  EXPECT_LT(*at, 30);  // sooner than any warm-up: once the fit has its 5 s and is half the limit
  EXPECT_THAT(eta.state().summary, HasSubstr("validate run r-7 at "));
  EXPECT_THAT(eta.state().summary, HasSubstr("of 400.0 MiB"));
  EXPECT_THAT(eta.state().summary, HasSubstr("× its usual 150.0 MiB at "));
  EXPECT_THAT(eta.state().summary, HasSubstr("the limit in about"));
}

// Its usual runs ended at 10 s; it is past them when its fit is half the limit (25 s): it is
// compared with what they ended with, not left to the 2-minute warm-up (it was: no page
// before the kill).
TEST(LimitEtaEarlyTest, ARunOlderThanItsUsualRunsIsComparedWithWhatTheyEndedWith) {
  LimitEtaDetector eta(FastEta());
  RunExpectation usual = UsuallyFlatAt(150);
  usual.usual_memory = {{0, 150 * kMiB}, {10, 150 * kMiB}};
  eta.Expect(usual);
  const std::optional<int> at = FirstAlarm(eta);
  ASSERT_TRUE(at);
  EXPECT_GT(*at, 10);
  EXPECT_LT(*at, 30);
  EXPECT_THAT(eta.state().summary, HasSubstr("× its usual 150.0 MiB at 10s"));
}

TEST(LimitEtaEarlyTest, ARunThatClimbsAsUsualWaitsOutTheWarmup) {
  // Its stage usually climbs the same way (and its clean runs were not killed): no page before
  // the warm-up, not even the short one.
  LimitEtaDetector eta(FastEta());
  RunExpectation usual = UsuallyFlatAt(0);
  usual.usual_memory = {{0, 100 * kMiB}, {300, 1300 * kMiB}};
  eta.Expect(usual);
  EXPECT_FALSE(FirstAlarm(eta));
}

RunExpectation Usual(double median_s, double p90_s, std::optional<double> cpu_s = std::nullopt) {
  return RunExpectation{.run_id = "r",
                        .stage = "validate",
                        .start = kStart,
                        .median_wall_seconds = median_s,
                        .p90_wall_seconds = p90_s,
                        .median_cpu_seconds = cpu_s};
}

TEST(RunPaceTest, SlowPastTheP90AndTheMinimumRatio) {
  const SlowRunConfig config;  // min_ratio 1.3
  EXPECT_FALSE(JudgePace(config, Usual(40, 60), {.age_seconds = 59}, std::nullopt).slow);
  const PaceVerdict past = JudgePace(config, Usual(40, 60), {.age_seconds = 61}, std::nullopt);
  EXPECT_TRUE(past.slow);
  EXPECT_DOUBLE_EQ(past.ratio, 61.0 / 40);
  // Baseline runs of nearly one length: their p90 is a hair above the median.
  EXPECT_FALSE(JudgePace(config, Usual(40, 40.5), {.age_seconds = 50}, std::nullopt).slow);
  EXPECT_TRUE(JudgePace(config, Usual(40, 40.5), {.age_seconds = 52}, std::nullopt).slow);
  SlowRunConfig off;
  off.enabled = false;
  EXPECT_FALSE(JudgePace(off, Usual(40, 60), {.age_seconds = 100}, std::nullopt).active());
}

TEST(RunPaceTest, ProjectedEndAtTheRunsCpuPaceOrItsUsualWallTime) {
  // 30 s of CPU usually; 10 s done in 20 s (0.5 CPU): 20 s left at 0.5 CPU is 40 s more.
  EXPECT_EQ(ProjectedEnd(Usual(30, 35, 30), {.age_seconds = 20, .cpu_seconds = 10}),
            kStart + absl::Seconds(60));
  // More work than usual already: it may end any moment.
  EXPECT_EQ(ProjectedEnd(Usual(30, 35, 30), {.age_seconds = 20, .cpu_seconds = 40}),
            kStart + absl::Seconds(20));
  // No CPU figures: its usual wall time, or now once past it.
  EXPECT_EQ(ProjectedEnd(Usual(30, 35), {.age_seconds = 20}), kStart + absl::Seconds(30));
  EXPECT_EQ(ProjectedEnd(Usual(30, 35), {.age_seconds = 50}), kStart + absl::Seconds(50));
}

TEST(RunPaceTest, LateWhenItsPaceEndsItAfterThePipelinesDeadline) {
  const SlowRunConfig config;
  const RunPace pace{.age_seconds = 20, .cpu_seconds = 10};  // ends at start + 60 s
  EXPECT_TRUE(JudgePace(config, Usual(30, 35, 30), pace, kStart + absl::Seconds(50)).late);
  EXPECT_FALSE(JudgePace(config, Usual(30, 35, 30), pace, kStart + absl::Seconds(70)).late);
  EXPECT_FALSE(JudgePace(config, Usual(30, 35, 30), pace, std::nullopt).late);
  // Late, not slow: judged before its usual time is up.
  const PaceVerdict v = JudgePace(config, Usual(30, 35, 30), pace, kStart + absl::Seconds(50));
  EXPECT_TRUE(v.active());
  EXPECT_FALSE(v.slow);
}

}  // namespace
}  // namespace stagewatch
