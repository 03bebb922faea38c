#include "cgroup/cpu_stats.h"

#include <string>

#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using testing::Contains;
const std::string& kRoot = testing::kCgroupfsFixtures;
CgroupLayout HybridLayout() { return testing::HybridFixtureLayout(); }
CgroupLayout V2Layout() { return testing::V2FixtureLayout(); }

TEST(CpuStatsTest, ParsesV1CpuStat) {
  auto stats = ParseCpuStatV1(
      "nr_periods 48213\nnr_throttled 377\nthrottled_time 21865317922\nnr_bursts 0\n"
      "burst_time 0\n",
      "cpu.stat");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->nr_periods, 48213u);
  EXPECT_EQ(stats->nr_throttled, 377u);
  EXPECT_EQ(stats->throttled_ns, 21865317922u);  // v1 already counts nanoseconds
  EXPECT_FALSE(stats->usage_ns.has_value());
}

TEST(CpuStatsTest, V1CpuStatMissingAKeyIsAnError) {
  auto stats = ParseCpuStatV1("nr_periods 48213\nnr_throttled 377\n", "cpu.stat");
  ASSERT_FALSE(stats.ok());
  EXPECT_TRUE(Contains(stats.status().message(), "cpu.stat")) << stats.status();
  EXPECT_TRUE(Contains(stats.status().message(), "throttled_time")) << stats.status();
}

TEST(CpuStatsTest, ParsesCpuacctUsage) {
  EXPECT_EQ(ParseCpuacctUsage("2338803978367\n", "cpuacct.usage").value(), 2338803978367u);
  EXPECT_EQ(ParseCpuacctUsage("0\n", "cpuacct.usage").value(), 0u);
}

TEST(CpuStatsTest, MalformedCpuacctUsageIsAnError) {
  for (const char* text : {"", "23388\n03978367\n", "-5\n", " 12\n", "12 \n", "1e5\n",
                           "99999999999999999999\n", "2338803"}) {
    auto usage = ParseCpuacctUsage(text, "/cg/cpuacct.usage");
    ASSERT_FALSE(usage.ok()) << text;
    EXPECT_EQ(usage.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(Contains(usage.status().message(), "/cg/cpuacct.usage")) << usage.status();
  }
}

TEST(CpuStatsTest, ParsesV2CpuStatWithThrottling) {
  auto stats = ParseCpuStatV2(
      "usage_usec 4178230157\nuser_usec 3512007431\nsystem_usec 666222726\nnr_periods 381520\n"
      "nr_throttled 1289\nthrottled_usec 93011654\nnr_bursts 0\nburst_usec 0\n",
      "cpu.stat");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_ns, 4178230157000u);
  EXPECT_EQ(stats->nr_periods, 381520u);
  EXPECT_EQ(stats->nr_throttled, 1289u);
  EXPECT_EQ(stats->throttled_ns, 93011654000u);
}

TEST(CpuStatsTest, V2WithoutCpuControllerHasNoThrottling) {
  auto stats = ParseCpuStatV2(
      "usage_usec 2327492000\nuser_usec 1856568000\nsystem_usec 470924000\nnice_usec 0\n",
      "cpu.stat");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_ns, 2327492000000u);
  EXPECT_FALSE(stats->nr_periods.has_value());
  EXPECT_FALSE(stats->nr_throttled.has_value());
  EXPECT_FALSE(stats->throttled_ns.has_value());
}

TEST(CpuStatsTest, V2Errors) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"user_usec 1\n", "usage_usec"},
      {"usage_usec abc\n", "usage_usec"},
      {"usage_usec 10\nnr_periods 5\n", "only some"},
      {"usage_usec 10\nnr_periods 5\nnr_throttled 1\nthrottled_usec x\n", "throttled_usec"},
      {"usage_usec 10\nuser_usec 6", "truncated"},
      {"usage_usec 18446744073709551615\n", "overflows"},
      {"", "empty"},
  };
  for (const Case& c : cases) {
    auto stats = ParseCpuStatV2(c.text, "/cg/cpu.stat");
    ASSERT_FALSE(stats.ok()) << c.text;
    EXPECT_TRUE(Contains(stats.status().message(), "/cg/cpu.stat")) << stats.status();
    EXPECT_TRUE(Contains(stats.status().message(), c.says)) << stats.status();
  }
}

TEST(CpuStatsTest, ReadsV1CpuAndCpuacctHierarchies) {
  auto stats = ReadCpuStats(HybridLayout(), "/job");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_ns, 2338803978367u);
  EXPECT_EQ(stats->nr_periods, 48213u);
  EXPECT_EQ(stats->nr_throttled, 377u);
  EXPECT_EQ(stats->throttled_ns, 21865317922u);
}

TEST(CpuStatsTest, V1WithoutCpuacctHierarchyLeavesUsageUnset) {
  CgroupLayout layout = HybridLayout();
  layout.v1_roots.erase("cpuacct");
  auto stats = ReadCpuStats(layout, "/job");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->usage_ns.has_value());
  EXPECT_EQ(stats->nr_throttled, 377u);
}

TEST(CpuStatsTest, V1WithNeitherHierarchyIsNotFound) {
  CgroupLayout layout = HybridLayout();
  layout.v1_roots.erase("cpu");
  layout.v1_roots.erase("cpuacct");
  auto stats = ReadCpuStats(layout, "/job");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
}

TEST(CpuStatsTest, V1CgroupNotMirroredIsNotFoundNamingTheFile) {
  auto stats = ReadCpuStats(HybridLayout(), "/nomirror");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(stats.status().message(), "/v1/cpu/nomirror/cpu.stat")) << stats.status();
}

TEST(CpuStatsTest, V1BrokenFilesAreErrorsNamingThem) {
  auto bad = ReadCpuStats(HybridLayout(), "/badcpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status().message(), "/v1/cpu/badcpu/cpu.stat")) << bad.status();
  EXPECT_TRUE(Contains(bad.status().message(), "nr_throttled")) << bad.status();

  auto cut = ReadCpuStats(HybridLayout(), "/cutacct");
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(Contains(cut.status().message(), "/v1/cpuacct/cutacct/cpuacct.usage"))
      << cut.status();
  EXPECT_TRUE(Contains(cut.status().message(), "truncated")) << cut.status();
}

TEST(CpuStatsTest, ReadsV2CpuStat) {
  auto stats = ReadCpuStats(V2Layout(), "/job");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_ns, 4178230157000u);
  EXPECT_EQ(stats->nr_periods, 381520u);
  EXPECT_EQ(stats->nr_throttled, 1289u);
  EXPECT_EQ(stats->throttled_ns, 93011654000u);

  auto nocpu = ReadCpuStats(V2Layout(), "/nocpu");
  ASSERT_TRUE(nocpu.ok()) << nocpu.status();
  EXPECT_EQ(nocpu->usage_ns, 2562364000000u);
  EXPECT_FALSE(nocpu->throttled_ns.has_value());
}

TEST(CpuStatsTest, V2BrokenFilesAreErrors) {
  auto partial = ReadCpuStats(V2Layout(), "/partial");
  ASSERT_FALSE(partial.ok());
  EXPECT_TRUE(Contains(partial.status().message(), "/v2/partial/cpu.stat")) << partial.status();

  auto bad = ReadCpuStats(V2Layout(), "/badusage");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "usage_usec")) << bad.status();

  auto gone = ReadCpuStats(V2Layout(), "/gone");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(gone.status().message(), "/v2/gone/cpu.stat")) << gone.status();
}

TEST(CpuStatsTest, V2KeyWithoutCgroup2MountIsNotFound) {
  CgroupLayout layout = V2Layout();
  layout.v2_root.clear();
  auto stats = ReadCpuStats(layout, "/job");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace stagewatch
