#include "units.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/run_id.h"
#include "runs/usage_series.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(UnitsTest, SizesArePowersOf1024) {
  EXPECT_EQ(*ParseSize("400M", "--memory-max"), 400ull << 20);
  EXPECT_EQ(*ParseSize("2G", "--memory-max"), 2ull << 30);
  EXPECT_EQ(*ParseSize("1.5g", "--memory-max"), 3ull << 29);
  EXPECT_EQ(*ParseSize("512k", "--memory-max"), 512ull << 10);
  EXPECT_EQ(*ParseSize("209715200", "--memory-max"), 209715200ull);
  for (const char* bad : {"", "M", "-1M", "1.2.3G", "12MB", "abc", "1e9", " 5"}) {
    absl::StatusOr<uint64_t> size = ParseSize(bad, "--memory-max");
    ASSERT_FALSE(size.ok()) << bad;
    EXPECT_THAT(size.status().message(), HasSubstr("e.g. 400M or 2G")) << bad;
  }
  EXPECT_THAT(ParseSize("0", "--memory-high").status().message(), HasSubstr("above 0"));
}

TEST(UnitsTest, Cores) {
  EXPECT_DOUBLE_EQ(*ParseCores("0.2", "--cpu-max"), 0.2);
  EXPECT_DOUBLE_EQ(*ParseCores("2", "--cpu-max"), 2);
  EXPECT_FALSE(ParseCores("0", "--cpu-max").ok());
  EXPECT_FALSE(ParseCores("-1", "--cpu-max").ok());
}

// One syntax for every flag and key that takes a duration: absl's units plus days.
TEST(UnitsTest, Durations) {
  EXPECT_EQ(*ParseDuration("24h", "--since"), absl::Hours(24));
  EXPECT_EQ(*ParseDuration("7d", "--since"), absl::Hours(24 * 7));
  EXPECT_EQ(*ParseDuration("1.5d", "x"), absl::Hours(36));
  EXPECT_EQ(*ParseDuration("1d12h", "x"), absl::Hours(36));
  EXPECT_EQ(*ParseDuration("1h30m", "x"), absl::Minutes(90));
  EXPECT_EQ(*ParseDuration("200ms", "x"), absl::Milliseconds(200));
  EXPECT_EQ(*ParseDuration("0", "x"), absl::ZeroDuration());
  EXPECT_EQ(ParseDuration("yesterday", "--since").status().message(),
            "--since \"yesterday\" is not a duration; write e.g. 200ms, 1m30s, 24h or 7d");
  EXPECT_EQ(ParseDuration("-1d", "x").status().message(), "x must not be negative (got \"-1d\")");
  for (const char* bad : {"", "d", "1", "15", "1d-2h", "1d+2h", "2h1d", "1dd", "inf", "1e3d",
                          " 1d", "1 d"}) {
    EXPECT_FALSE(ParseDuration(bad, "x").ok()) << bad;
  }
}

TEST(UnitsTest, FormatsAndParsesTimesAndSizes) {
  const absl::Time t = absl::FromUnixMillis(1'796'111'112'345);
  EXPECT_EQ(FormatRfc3339(t), "2026-12-01T07:45:12.345Z");
  EXPECT_EQ(FormatRfc3339(absl::FromUnixMillis(1714564800123)), "2024-05-01T12:00:00.123Z");
  EXPECT_EQ(FormatRfc3339(absl::FromUnixSeconds(0)), "1970-01-01T00:00:00.000Z");  // fixed width
  EXPECT_EQ(*ParseRfc3339("2026-12-01T07:45:12.345Z"), t);
  EXPECT_EQ(*ParseRfc3339("2026-12-01T08:45:12.345+01:00"), t);
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(200 << 20), "200.0 MiB");
  EXPECT_EQ(FormatBytes(3ull << 29), "1.50 GiB");
  EXPECT_EQ(FormatBytes(2.0 * (1 << 30)), "2.00 GiB");
  EXPECT_EQ(FormatBytes(-3.0 * (1 << 20)), "-3.00 MiB");  // a shrinking series' growth
  EXPECT_EQ(FormatBytes(5ull << 40), "5.00 TiB");
  EXPECT_EQ(FormatBytes(2048ull << 40), "2048.0 TiB");  // TiB is the largest unit
  EXPECT_EQ(FormatSeconds(12.34), "12.3 s");
  EXPECT_EQ(FormatSeconds(125), "2m05s");
}

TEST(UnitsTest, GeneratedRunIdsSortByTimeAndPassTheCheck) {
  const absl::Time t = absl::FromUnixSeconds(1'796'111'112);
  const std::string a = NewRunId(t);
  EXPECT_THAT(a, MatchesRegex("20261201T074512Z-[0-9a-f]{4}"));
  EXPECT_LT(a, NewRunId(t + absl::Seconds(1)));
  EXPECT_TRUE(CheckRunId(a).ok()) << CheckRunId(a);
  for (const char* bad : {"", "../x", "a/b", ".hidden", "with space"}) {
    const absl::Status status = CheckRunId(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("is not valid")) << bad;
  }
  EXPECT_THAT(CheckRunId(std::string(129, 'a')).message(), HasSubstr("up to 128"));
}

TEST(UsageSeriesTest, MeanP95AndTimeNearTheLimit) {
  UsageSeries series(0.9);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  series.SetBaseline(t0, 0);
  // 100 one-second samples: usage i MiB against a 100 MiB limit, CPU 0.5 s per second.
  for (int i = 1; i <= 100; ++i) {
    series.Add(t0 + absl::Seconds(i), uint64_t(i) << 20, uint64_t{100} << 20,
               uint64_t(i) * 500'000'000);
  }
  const UsageSummary s = series.Summary();
  EXPECT_EQ(s.samples, 100);
  EXPECT_EQ(*s.memory_mean_bytes, uint64_t(50.5 * (1 << 20)));
  EXPECT_EQ(*s.memory_p95_bytes, uint64_t{95} << 20);
  // Samples 90..100 are at or above 90 MiB: the 11 seconds ending at them.
  EXPECT_DOUBLE_EQ(*s.near_limit_seconds, 11);
  // Every CPU rate counts from the one before, the first from the baseline.
  EXPECT_DOUBLE_EQ(*s.cpu_p95_cores, 0.5);
}

TEST(UsageSeriesTest, ARunShorterThanTheIntervalHasNoSampledFigures) {
  UsageSeries series(0.9);
  series.SetBaseline(absl::FromUnixSeconds(1000), 0);
  const UsageSummary s = series.Summary();
  EXPECT_EQ(s.samples, 0);
  EXPECT_FALSE(s.memory_mean_bytes || s.memory_p95_bytes || s.near_limit_seconds || s.cpu_p95_cores);
}

TEST(UsageSeriesTest, StaysBoundedOnLongRuns) {
  UsageSeries series(0.9, /*max_samples=*/64);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10'000; ++i) series.Add(t0 + absl::Seconds(i), uint64_t(i % 100), std::nullopt, std::nullopt);
  EXPECT_LT(series.kept(), 64u);
  EXPECT_GE(series.kept(), 16u);
  const UsageSummary s = series.Summary();
  EXPECT_EQ(s.samples, 10'000);
  EXPECT_EQ(*s.memory_mean_bytes, 49u);  // every sample counts in the mean
  EXPECT_NEAR(double(*s.memory_p95_bytes), 95, 6);
  EXPECT_EQ(*s.near_limit_seconds, 0) << "no limit, never near it";
}

TEST(UsageSeriesTest, ALoweredBoundHalvesTheKeptSamplesAndFreesTheirRoom) {
  UsageSeries series(0.9);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int i = 0;
  for (; i < 1000; ++i) {
    series.Add(t0 + absl::Seconds(i), uint64_t(i % 100), std::nullopt, uint64_t(i) * 500'000'000);
  }
  ASSERT_EQ(series.kept(), 1000u);
  series.set_max_samples(64);
  series.Add(t0 + absl::Seconds(i), uint64_t(i % 100), std::nullopt, uint64_t(i) * 500'000'000);
  EXPECT_LT(series.kept(), 64u);
  EXPECT_GE(series.kept(), 32u);
  EXPECT_LE(series.kept_capacity(), 64u);
  for (++i; i < 5000; ++i) {
    series.Add(t0 + absl::Seconds(i), uint64_t(i % 100), std::nullopt, uint64_t(i) * 500'000'000);
  }
  EXPECT_LT(series.kept(), 64u);
  EXPECT_LE(series.kept_capacity(), 64u);
  const UsageSummary s = series.Summary();
  EXPECT_EQ(s.samples, 5000);
  EXPECT_EQ(*s.memory_mean_bytes, 49u);
  EXPECT_NEAR(double(*s.memory_p95_bytes), 95, 6);
  EXPECT_DOUBLE_EQ(*s.cpu_p95_cores, 0.5);  // every kept sample but the first has a rate
}

}  // namespace
}  // namespace stagewatch
