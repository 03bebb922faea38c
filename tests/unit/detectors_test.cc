// Behaviour of the anomaly detectors on small hand-made series. Their quality on realistic
// synthetic series (detection delays, false positives) is measured in
// detector_quality_test.cc.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "detectors/detector.h"
#include "detectors/limit_eta.h"
#include "detectors/memory_climb.h"
#include "detectors/pressure_spike.h"
#include "detectors/rate_baseline.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

constexpr double kMiB = 1024.0 * 1024;
constexpr double kGiB = 1024 * kMiB;

absl::Time T(double seconds) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(seconds);
}
Sample S(double seconds, double value) { return Sample{T(seconds), value}; }

// ---- common parts --------------------------------------------------------------------------

TEST(EwmaStatsTest, IsAPlainAverageWhileFewSamplesHaveBeenSeen) {
  EwmaStats stats(absl::Minutes(10));
  for (double x : {1.0, 2.0, 3.0, 4.0}) stats.Add(x, absl::Seconds(1));
  EXPECT_DOUBLE_EQ(stats.mean(), 2.5);
  EXPECT_NEAR(stats.stddev(), std::sqrt(1.25), 1e-12);
  EXPECT_EQ(stats.count(), 4u);
}

TEST(EwmaStatsTest, ForgetsWithTheConfiguredHalfLife) {
  EwmaStats stats(absl::Minutes(10));
  for (int i = 0; i < 20000; ++i) stats.Add(0, absl::Seconds(1));
  for (int i = 0; i < 600; ++i) stats.Add(10, absl::Seconds(1));
  EXPECT_NEAR(stats.mean(), 5, 0.01);  // one half-life: half way to the new level
}

TEST(SampleWindowTest, KeepsOneAnchorSampleBeforeTheSpan) {
  SampleWindow window(absl::Seconds(10));
  for (int i = 0; i <= 20; ++i) ASSERT_TRUE(window.Add(S(i, i)));
  EXPECT_EQ(window.oldest().t, T(10));
  EXPECT_EQ(window.covered(), absl::Seconds(10));
  ASSERT_TRUE(window.Add(S(20.5, 0)));
  EXPECT_EQ(window.oldest().t, T(10));  // the newest sample at or before 10.5
}

TEST(SampleWindowTest, RejectsStaleAndNonFiniteSamples) {
  SampleWindow window(absl::Seconds(10));
  ASSERT_TRUE(window.Add(S(5, 1)));
  EXPECT_FALSE(window.Add(S(5, 2)));
  EXPECT_FALSE(window.Add(S(4, 2)));
  EXPECT_FALSE(window.Add(S(6, std::numeric_limits<double>::quiet_NaN())));
  EXPECT_FALSE(window.Add(S(6, std::numeric_limits<double>::infinity())));
  EXPECT_EQ(window.samples().size(), 1u);
}

TEST(FormatTest, BytesAndDurationsReadLikeAnAlert) {
  // The one byte format of units.h, as the runs' reports print it.
  EXPECT_EQ(FormatBytes(420 * kMiB), "420.0 MiB");
  EXPECT_EQ(FormatBytes(2 * kGiB), "2.00 GiB");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(-3 * kMiB), "-3.00 MiB");
  EXPECT_EQ(FormatRoundedDuration(absl::Seconds(580.4)), "9m40s");
}

// ---- memory climb ----------------------------------------------------------------------------

// Feeds `level` plus a deterministic +-1 MiB wiggle from `from` to `to` (exclusive), 1 s apart.
template <typename D>
void FeedWiggle(D& detector, int from, int to, double level) {
  for (int i = from; i < to; ++i) detector.Update(S(i, level + (i % 2 ? kMiB : -kMiB)));
}

TEST(MemoryClimbTest, FiresOnASteepClimbAndClearsAfterTheHold) {
  MemoryClimbDetector climb;
  FeedWiggle(climb, 0, 600, 4 * kGiB);
  EXPECT_FALSE(climb.state().active);
  double usage = 4 * kGiB;
  int fired_at = -1;
  for (int i = 600; i < 610; ++i) {  // +2 GiB over 10 s
    usage += 200 * kMiB;
    if (climb.Update(S(i, usage)).active && fired_at < 0) fired_at = i;
  }
  EXPECT_EQ(fired_at, 601);  // the second step: 400 MiB grown, over the 256 MiB floor
  EXPECT_NE(climb.state().summary.find("memory grew"), std::string::npos) << climb.state().summary;
  EXPECT_NE(climb.state().summary.find("in 30s"), std::string::npos);
  // Still active while the climb is inside the window, cleared after it left plus the hold.
  FeedWiggle(climb, 610, 640, usage);
  EXPECT_TRUE(climb.state().active);
  FeedWiggle(climb, 640, 700, usage);
  EXPECT_FALSE(climb.state().active);
  EXPECT_EQ(climb.state().summary, "");
}

TEST(MemoryClimbTest, StaysQuietDuringWarmUp) {
  MemoryClimbDetector climb;
  for (int i = 0; i < 120; ++i) EXPECT_FALSE(climb.Update(S(i, i * 100 * kMiB)).active);
}

TEST(MemoryClimbTest, StartUpRampIsNotLearnedAsNormal) {
  MemoryClimbDetector climb;
  FeedWiggle(climb, 0, 20, 0);
  for (int i = 20; i < 40; ++i) climb.Update(S(i, (i - 19) * 300 * kMiB));  // 6 GiB in 20 s
  FeedWiggle(climb, 40, 240, 6 * kGiB);
  EXPECT_LT(climb.baseline().stddev(), 10 * kMiB);  // learning began once it settled
  double usage = 6 * kGiB;
  for (int i = 240; i < 250; ++i) climb.Update(S(i, usage += 200 * kMiB));
  EXPECT_TRUE(climb.state().active);
}

TEST(MemoryClimbTest, GrowthBelowTheFloorNeverFiresEvenOnAFlatSeries) {
  MemoryClimbDetector climb;
  for (int i = 0; i < 600; ++i) climb.Update(S(i, 4 * kGiB));  // stddev of the rate: 0
  for (int i = 600; i < 630; ++i) {
    EXPECT_FALSE(climb.Update(S(i, 4 * kGiB + (i - 599) * 8 * kMiB)).active);  // 240 MiB
  }
}

TEST(MemoryClimbTest, BaselineIsFrozenWhileActive) {
  MemoryClimbDetector climb;
  FeedWiggle(climb, 0, 600, 4 * kGiB);
  const size_t learned = climb.baseline().count();
  double usage = 4 * kGiB;
  for (int i = 600; i < 660; ++i) {
    usage += 100 * kMiB;
    ASSERT_TRUE(climb.Update(S(i, usage)).active || i < 602) << i;
  }
  EXPECT_LE(climb.baseline().count(), learned + 2);  // at most the samples before it fired
  EXPECT_LT(climb.baseline().mean(), kMiB);
}

TEST(MemoryClimbTest, DisabledNeverFires) {
  MemoryClimbConfig config;
  config.enabled = false;
  MemoryClimbDetector climb(config);
  FeedWiggle(climb, 0, 600, 4 * kGiB);
  for (int i = 600; i < 620; ++i) EXPECT_FALSE(climb.Update(S(i, (i - 590) * kGiB)).active);
  EXPECT_FALSE(climb.rate());
}

TEST(MemoryClimbTest, IgnoresOutOfOrderSamples) {
  MemoryClimbDetector climb;
  FeedWiggle(climb, 0, 600, 4 * kGiB);
  EXPECT_FALSE(climb.Update(S(100, 40 * kGiB)).active);  // a stale, absurd sample
  FeedWiggle(climb, 600, 610, 4 * kGiB);
  EXPECT_FALSE(climb.state().active);
}

// ---- time to limit -------------------------------------------------------------------------

TEST(LimitEtaTest, NoLimitMeansNoEta) {
  LimitEtaDetector eta;
  for (int i = 0; i < 60; ++i) EXPECT_FALSE(eta.Update(S(i, (4 + i * 0.05) * kGiB), {}).active);
  EXPECT_FALSE(eta.EtaSeconds());
  EXPECT_TRUE(eta.slope());  // the trend is known, only the limit is missing
}

TEST(LimitEtaTest, ExactLineGivesTheExactEta) {
  LimitEtaDetector eta;
  const double limit = 8 * kGiB;
  for (int i = 0; i <= 60; ++i) eta.Update(S(i, 4 * kGiB + i * 2 * kMiB), limit);
  ASSERT_TRUE(eta.EtaSeconds());
  const double usage = 4 * kGiB + 60 * 2 * kMiB;
  EXPECT_NEAR(*eta.EtaSeconds(), (limit - usage) / (2 * kMiB), 1e-6);
  EXPECT_NEAR(*eta.slope(), 2 * kMiB, 1e-3);
  EXPECT_NEAR(*eta.fitted_usage(), usage, 1);
  EXPECT_FALSE(eta.state().active);  // about 34 minutes away
}

TEST(LimitEtaTest, NeedsTenPointsOverThirtySeconds) {
  LimitEtaDetector eta;
  for (int i = 0; i < 29; ++i) eta.Update(S(i, 6 * kGiB + i * 100 * kMiB), 8 * kGiB);
  EXPECT_FALSE(eta.EtaSeconds());  // 29 points over 28 s
  LimitEtaDetector sparse;
  for (int i = 0; i < 9; ++i) sparse.Update(S(i * 10, 6 * kGiB + i * 10 * kMiB), 8 * kGiB);
  EXPECT_FALSE(sparse.EtaSeconds());  // 9 points over 80 s
  sparse.Update(S(90, 6 * kGiB + 90 * kMiB), 8 * kGiB);
  EXPECT_TRUE(sparse.EtaSeconds());
}

TEST(LimitEtaTest, FlatOrFallingUsageHasNoEtaNotInfinity) {
  LimitEtaDetector flat, falling;
  for (int i = 0; i < 60; ++i) {
    flat.Update(S(i, 6 * kGiB), 8 * kGiB);
    falling.Update(S(i, 6 * kGiB - i * kMiB), 8 * kGiB);
  }
  EXPECT_FALSE(flat.EtaSeconds());
  EXPECT_FALSE(falling.EtaSeconds());
}

// The hand-made leaks below start at once; the warm-up has its own test.
LimitEtaConfig NoWarmup() {
  LimitEtaConfig config;
  config.warmup = absl::ZeroDuration();
  return config;
}

TEST(LimitEtaTest, FiresWhenNearAndClearsWithHysteresis) {
  LimitEtaDetector eta(NoWarmup());
  const double limit = 8 * kGiB;
  double usage = 6 * kGiB;
  for (int i = 0; i < 60; ++i) eta.Update(S(i, usage += 5 * kMiB), limit);  // ~ 5 min left
  ASSERT_TRUE(eta.state().active);
  EXPECT_NE(eta.state().summary.find("of 8.00 GiB limit"), std::string::npos) << eta.state().summary;
  EXPECT_NE(eta.state().summary.find("limit reached in about"), std::string::npos);
  // The growth stops: no ETA, cleared once the hold has passed.
  int cleared_at = -1;
  for (int i = 60; i < 200 && cleared_at < 0; ++i) {
    if (!eta.Update(S(i, usage), limit).active) cleared_at = i;
  }
  EXPECT_GT(cleared_at, 60 + 30);
}

TEST(LimitEtaTest, RemovedLimitClearsAtOnce) {
  LimitEtaDetector eta(NoWarmup());
  double usage = 6 * kGiB;
  for (int i = 0; i < 60; ++i) eta.Update(S(i, usage += 5 * kMiB), 8 * kGiB);
  ASSERT_TRUE(eta.state().active);
  EXPECT_FALSE(eta.Update(S(60, usage += 5 * kMiB), {}).active);
}

TEST(LimitEtaTest, FarFromTheLimitDoesNotFire) {
  LimitEtaDetector eta(NoWarmup());
  double usage = 0.5 * kGiB;
  for (int i = 0; i < 60; ++i) eta.Update(S(i, usage += 20 * kMiB), 8 * kGiB);
  ASSERT_TRUE(eta.EtaSeconds());
  EXPECT_LT(*eta.EtaSeconds(), 600);  // would reach it within 10 min...
  EXPECT_FALSE(eta.state().active);   // ...but uses 21% of it: a stage filling up, not a leak
}

TEST(LimitEtaTest, WarmUpHoldsTheAlarmButNotTheEta) {
  LimitEtaDetector eta;
  double usage = 6 * kGiB;
  for (int i = 0; i < 120; ++i) {
    EXPECT_FALSE(eta.Update(S(i, usage += 5 * kMiB), 8 * kGiB).active) << i;
    if (i >= 30) {
      EXPECT_TRUE(eta.EtaSeconds()) << i;
    }
  }
  EXPECT_TRUE(eta.Update(S(120, usage += 5 * kMiB), 8 * kGiB).active);
}

TEST(LimitEtaTest, AlreadyAtTheLimitIsZero) {
  LimitEtaDetector eta(NoWarmup());
  for (int i = 0; i < 40; ++i) eta.Update(S(i, 7.95 * kGiB + i * 4 * kMiB), 8 * kGiB);
  ASSERT_TRUE(eta.EtaSeconds());
  EXPECT_EQ(*eta.EtaSeconds(), 0);
  EXPECT_TRUE(eta.state().active);
}

TEST(LimitEtaTest, ALargeReleaseInTheWindowMeansNoTrend) {
  LimitEtaDetector eta;
  for (int i = 0; i < 120; ++i) {  // rising 34 MiB/s, dropping 1 GiB at 60 s: a sawtooth
    eta.Update(S(i, 5 * kGiB + (i % 60) * 17 * kMiB), 8 * kGiB);
  }
  EXPECT_FALSE(eta.EtaSeconds());
}

TEST(LimitEtaTest, LevellingOffMeansNoTrend) {
  LimitEtaDetector eta;
  for (int i = 0; i < 60; ++i) {  // start-up: up to 6 GiB in 20 s, then flat
    eta.Update(S(i, 6 * kGiB * std::min(1.0, i / 20.0)), 8 * kGiB);
  }
  ASSERT_TRUE(eta.slope());
  EXPECT_GT(*eta.slope(), 0);
  EXPECT_FALSE(eta.EtaSeconds());
}

// ---- pressure spike --------------------------------------------------------------------------

TEST(PressureSpikeTest, FiresAfterTheSustainAndReportsTheShareStalled) {
  PressureSpikeDetector psi;
  double total = 0;
  int fired_at = -1;
  for (int i = 0; i < 60; ++i) {
    if (psi.Update(S(i, total)).active && fired_at < 0) fired_at = i;
    total += 0.3;
  }
  // Above 10% from 15 s (half a window covered), fired 15 s later.
  EXPECT_EQ(fired_at, 30);
  ASSERT_TRUE(psi.stall_fraction());
  EXPECT_NEAR(*psi.stall_fraction(), 0.3, 1e-9);
  EXPECT_NE(psi.state().summary.find("30% of the time over 30s"), std::string::npos)
      << psi.state().summary;
}

TEST(PressureSpikeTest, ShortStallDoesNotFire) {
  PressureSpikeDetector psi;
  double total = 0;
  for (int i = 0; i < 200; ++i) {
    total += i == 100 || i == 110 ? 1.0 : (i == 105 ? 0.5 : 0.01);  // 2.5 s fully stalled
    EXPECT_FALSE(psi.Update(S(i, total)).active) << i;
  }
}

TEST(PressureSpikeTest, ClearsOnlyBelowHalfTheThreshold) {
  PressureSpikeDetector psi;
  double total = 0;
  int i = 0;
  for (; i < 60; ++i) psi.Update(S(i, total += 0.3));
  ASSERT_TRUE(psi.state().active);
  for (; i < 200; ++i) psi.Update(S(i, total += 0.07));
  EXPECT_TRUE(psi.state().active);  // 7%: below the threshold, above half of it
  for (; i < 300; ++i) psi.Update(S(i, total += 0.02));
  EXPECT_FALSE(psi.state().active);
}

TEST(PressureSpikeTest, CounterResetIsARestartNotANegativeRate) {
  PressureSpikeDetector psi;
  for (int i = 0; i < 60; ++i) psi.Update(S(i, 1000 + i * 0.01));
  psi.Update(S(60, 0.5));  // the cgroup was recreated
  EXPECT_FALSE(psi.stall_fraction());
  for (int i = 61; i < 120; ++i) {
    psi.Update(S(i, 0.5 + (i - 60) * 0.01));
    if (psi.stall_fraction()) {
      EXPECT_NEAR(*psi.stall_fraction(), 0.01, 1e-9);
    }
  }
  EXPECT_FALSE(psi.state().active);
}

// ---- fault storm and CPU starvation --------------------------------------------------------

TEST(RateBaselineTest, FaultStormFiresAboveTheFloorAfterWarmUp) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i < 100; ++i) {  // a storm during warm-up is learned, not paged
    EXPECT_FALSE(storm.Update(S(i, faults += (i > 50 ? 5000 : 10))).active);
  }
  RateBaselineDetector warm(FaultStormConfig());
  faults = 0;
  for (int i = 0; i < 600; ++i) warm.Update(S(i, faults += 10 + i % 3));
  int fired_at = -1;
  for (int i = 600; i < 630 && fired_at < 0; ++i) {
    if (warm.Update(S(i, faults += 2000)).active) fired_at = i;
  }
  // The busiest 3 s of the window are left out: after 6 s of storm the rate is
  // (3 * 2000 + 24 * 11) / 27 = 232/s.
  EXPECT_EQ(fired_at, 605);
  EXPECT_NE(warm.state().summary.find("major page faults at"), std::string::npos)
      << warm.state().summary;
  EXPECT_NE(warm.state().summary.find("threshold 200/s"), std::string::npos);
}

TEST(RateBaselineTest, StartUpPagingIsNotLearnedAsNormal) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i < 400; ++i) storm.Update(S(i, faults += i < 20 ? 5000 : 10));
  // Learning began once under the floor: only the start-up's tail is in the baseline (the
  // whole of it would put the stddev at several hundred per second).
  EXPECT_LT(storm.baseline().stddev(), 20);
  for (int i = 400; i < 420; ++i) storm.Update(S(i, faults += 1000));
  EXPECT_TRUE(storm.state().active);
}

TEST(RateBaselineTest, FloorKeepsAQuietStageQuiet) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i < 600; ++i) storm.Update(S(i, faults += 1));  // stddev 0
  for (int i = 600; i < 700; ++i) EXPECT_FALSE(storm.Update(S(i, faults += 150)).active);
}

TEST(RateBaselineTest, BaselineKeepsABusyStageQuiet) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i < 1200; ++i) storm.Update(S(i, faults += (i / 30) % 2 ? 1600 : 400));
  ASSERT_GT(storm.baseline().stddev(), 100);
  for (int i = 1200; i < 1300; ++i) EXPECT_FALSE(storm.Update(S(i, faults += 1800)).active);
}

TEST(RateBaselineTest, LoneBurstIsLeftOutOfTheRate) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i < 600; ++i) storm.Update(S(i, faults += 150));
  storm.Update(S(600, faults += 6000));  // a file paged in at once: 350/s over 30 s
  for (int i = 601; i < 640; ++i) {
    EXPECT_FALSE(storm.Update(S(i, faults += 150)).active);
    EXPECT_DOUBLE_EQ(*storm.signal(), 150);
  }
}

TEST(RateBaselineTest, CoarseSamplingLeavesNothingOut) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  for (int i = 0; i <= 600; i += 15) storm.Update(S(i, faults += (i % 30 ? 1500 : 3000)));
  ASSERT_TRUE(storm.signal());
  EXPECT_DOUBLE_EQ(*storm.signal(), 4500.0 / 30);  // two 15 s intervals, neither left out
}

TEST(RateBaselineTest, CounterResetNeverGivesANegativeRate) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 1e6;
  for (int i = 0; i < 600; ++i) storm.Update(S(i, faults += 20));
  faults = 0;
  for (int i = 600; i < 700; ++i) {
    storm.Update(S(i, faults += 20));
    if (storm.signal()) {
      EXPECT_NEAR(*storm.signal(), 20, 1e-9);
    }
    EXPECT_FALSE(storm.state().active);
  }
}

TEST(RateBaselineTest, StarvationUsesTheMedianSoLoneSpikesDoNotFire) {
  RateBaselineDetector starved(CpuStarvationConfig());
  for (int i = 0; i < 600; ++i) {
    EXPECT_FALSE(starved.Update(S(i, i % 60 == 0 ? 2.0 : 0.003 + (i % 3) * 1e-3)).active);
  }
  int fired_at = -1;
  for (int i = 600; i < 660 && fired_at < 0; ++i) {
    if (starved.Update(S(i, 0.2)).active) fired_at = i;
  }
  EXPECT_EQ(fired_at, 615);  // 16 of 31 samples in the window: the median is 200 ms
  EXPECT_NE(starved.state().summary.find("p99 run-queue latency at 200.0 ms"), std::string::npos)
      << starved.state().summary;
  for (int i = 660; i < 760; ++i) starved.Update(S(i, 0.004));
  EXPECT_FALSE(starved.state().active);
}

TEST(RateBaselineTest, ClearsAfterTheHoldOnly) {
  RateBaselineDetector storm(FaultStormConfig());
  double faults = 0;
  int i = 0;
  for (; i < 600; ++i) storm.Update(S(i, faults += 10));
  for (; i < 660; ++i) storm.Update(S(i, faults += 1000));
  ASSERT_TRUE(storm.state().active);
  for (; i < 690; ++i) storm.Update(S(i, faults += 10));
  EXPECT_TRUE(storm.state().active);  // the window still holds the storm
  for (; i < 760; ++i) storm.Update(S(i, faults += 10));
  EXPECT_FALSE(storm.state().active);
}

TEST(RateBaselineTest, DisabledNeverFires) {
  RateBaselineConfig config = FaultStormConfig();
  config.enabled = false;
  RateBaselineDetector storm(config);
  double faults = 0;
  for (int i = 0; i < 900; ++i) EXPECT_FALSE(storm.Update(S(i, faults += i * 10)).active);
}

}  // namespace
}  // namespace stagewatch
