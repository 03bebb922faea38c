#include "cgroup/memory_stats.h"

#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using testing::Contains;
const std::string& kRoot = testing::kCgroupfsFixtures;
CgroupLayout V1Layout() { return testing::HybridFixtureLayout(); }
CgroupLayout V2Layout() { return testing::V2FixtureLayout(); }

TEST(MemoryStatsTest, ParsesKeyedFile) {
  auto events = ParseMemoryKeyedFile("low 0\nhigh 321\nmax 57\noom 2\noom_kill 1\n", "e");
  ASSERT_TRUE(events.ok()) << events.status();
  const std::map<std::string, uint64_t> expected = {
      {"low", 0}, {"high", 321}, {"max", 57}, {"oom", 2}, {"oom_kill", 1}};
  EXPECT_EQ(*events, expected);
}

TEST(MemoryStatsTest, KeyedFileErrorsNameFileLineAndProblem) {
  auto bad = ParseMemoryKeyedFile("cache 266240\nrss 1687552\npgfault abc\n", "memory.stat");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "memory.stat: line 3 \"pgfault abc\": value is not a number");

  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"", "empty"},
      {"cache 1\nrss 2", "truncated"},
      {"cache 1\nrss\n", "line 2 \"rss\": expected \"key value\""},
      {"cache 1\n 5\n", "line 2"},
      {"cache 1\n\n", "line 2"},
      {"cache -1\n", "not a number"},
      {"cache 1 2\n", "not a number"},
      {"cache 99999999999999999999\n", "not a number"},
      {"oom 1\noom 2\n", "twice"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseMemoryKeyedFile(c.text, "/cg/memory.stat");
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_TRUE(Contains(parsed.status().message(), "/cg/memory.stat")) << parsed.status();
    EXPECT_TRUE(Contains(parsed.status().message(), c.says)) << parsed.status();
  }
}

TEST(MemoryStatsTest, ParsesValuesAndLimits) {
  EXPECT_EQ(ParseMemoryValue("473706496\n", "memory.current").value(), 473706496u);
  EXPECT_FALSE(ParseMemoryValue("4737", "memory.current").ok());  // truncated
  EXPECT_FALSE(ParseMemoryValue("max\n", "memory.current").ok());

  EXPECT_EQ(ParseMemoryLimitV2("max\n", "memory.max").value(), std::nullopt);
  EXPECT_EQ(ParseMemoryLimitV2("536870912\n", "memory.max").value(), 536870912u);
  EXPECT_FALSE(ParseMemoryLimitV2("max", "memory.max").ok());
  EXPECT_FALSE(ParseMemoryLimitV2("unlimited\n", "memory.max").ok());

  EXPECT_EQ(ParseMemoryLimitV1("9223372036854771712\n", "l").value(), std::nullopt);
  EXPECT_EQ(ParseMemoryLimitV1("4611686018427387904\n", "l").value(), std::nullopt);  // 2^62
  EXPECT_EQ(ParseMemoryLimitV1("4611686018427387903\n", "l").value(), 4611686018427387903u);
  EXPECT_EQ(ParseMemoryLimitV1("268435456\n", "l").value(), 268435456u);
  EXPECT_FALSE(ParseMemoryLimitV1("-1\n", "l").ok());
}

TEST(MemoryStatsTest, MemoryStatPrefersV1HierarchicalTotals) {
  MemoryCgroupStats stats;
  const std::string v1 =
      "cache 266240\ninactive_file 61440\npgfault 32140\npgmajfault 0\n"
      "total_inactive_file 220348416\ntotal_pgfault 34452648\ntotal_pgmajfault 1995\n";
  ASSERT_TRUE(ParseMemoryStat(v1, "memory.stat", stats).ok());
  EXPECT_EQ(stats.inactive_file_bytes, 220348416u);
  EXPECT_EQ(stats.pgfault, 34452648u);
  EXPECT_EQ(stats.pgmajfault, 1995u);

  // Without total_* lines (v2, or a v1 kernel that lacks them) the plain keys count.
  ASSERT_TRUE(ParseMemoryStat("anon 4096\ninactive_file 61440\npgfault 32140\n", "memory.stat",
                              stats)
                  .ok());
  EXPECT_EQ(stats.inactive_file_bytes, 61440u);
  EXPECT_EQ(stats.pgfault, 32140u);
  EXPECT_FALSE(stats.pgmajfault.has_value());

  auto missing = ParseMemoryStat("pgfault 1\n", "/cg/memory.stat", stats);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.message(), "/cg/memory.stat")) << missing;
  EXPECT_TRUE(Contains(missing.message(), "inactive_file")) << missing;
}

// Every line is checked, not only the three taken: the same errors as ParseMemoryKeyedFile's.
TEST(MemoryStatsTest, MemoryStatRejectsWhatTheKeyedParserRejects) {
  for (const std::string text :
       {"inactive_file 1\nrss abc\n", "inactive_file 1\nno_value\n", "inactive_file 1\n 2\n",
        "inactive_file 1\ninactive_file 2\n", "inactive_file 1\nrss 2"}) {
    MemoryCgroupStats stats;
    const absl::Status scanned = ParseMemoryStat(text, "/cg/memory.stat", stats);
    const absl::Status keyed = ParseMemoryKeyedFile(text, "/cg/memory.stat").status();
    EXPECT_FALSE(scanned.ok()) << absl::CEscape(text);
    EXPECT_EQ(scanned.message(), keyed.message()) << absl::CEscape(text);
  }
}

TEST(MemoryStatsTest, ReadsV1Cgroup) {
  auto stats = ReadMemoryStats(V1Layout(), "/job");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_bytes, 650108928u);
  EXPECT_FALSE(stats->limit_bytes.has_value());  // 9223372036854771712 = unlimited
  EXPECT_FALSE(stats->high_bytes.has_value());   // v1 has no memory.high
  EXPECT_EQ(stats->swap_bytes, 650141696u - 650108928u);
  EXPECT_EQ(stats->peak_bytes, 711811072u);
  EXPECT_EQ(stats->inactive_file_bytes, 208072704u);  // total_inactive_file, not inactive_file
  EXPECT_EQ(stats->working_set_bytes, 650108928u - 208072704u);
  EXPECT_EQ(stats->pgfault, 38440236u);
  EXPECT_EQ(stats->pgmajfault, 2634u);
  const std::map<std::string, uint64_t> events = {{"failcnt", 3}, {"oom_kill", 1}};
  EXPECT_EQ(stats->events, events);
}

TEST(MemoryStatsTest, ReadsV1LimitedCgroupWithoutSwapAccounting) {
  auto stats = ReadMemoryStats(V1Layout(), "/limited");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_bytes, 3043328u);
  EXPECT_EQ(stats->limit_bytes, 268435456u);
  EXPECT_FALSE(stats->swap_bytes.has_value());  // no memory.memsw.* files
  EXPECT_EQ(stats->peak_bytes, 3432448u);
  EXPECT_EQ(stats->inactive_file_bytes, 380928u);
  EXPECT_EQ(stats->working_set_bytes, 3043328u - 380928u);
  EXPECT_EQ(stats->pgfault, 70372u);
  EXPECT_EQ(stats->pgmajfault, 22u);
  const std::map<std::string, uint64_t> events = {{"failcnt", 17}, {"oom_kill", 2}};
  EXPECT_EQ(stats->events, events);
}

TEST(MemoryStatsTest, V1OldKernelHasNoOomKillEvent) {
  auto stats = ReadMemoryStats(V1Layout(), "/old_kernel");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->events.empty());  // no failcnt file, oom_control without oom_kill
  EXPECT_FALSE(stats->peak_bytes.has_value());
  EXPECT_FALSE(stats->limit_bytes.has_value());
}

TEST(MemoryStatsTest, WorkingSetIsFlooredAtZero) {
  auto stats = ReadMemoryStats(V1Layout(), "/racy");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_bytes, 20480u);
  EXPECT_EQ(stats->inactive_file_bytes, 380928u);
  EXPECT_EQ(stats->working_set_bytes, 0u);
}

TEST(MemoryStatsTest, V1BrokenFilesAreErrorsNamingThem) {
  struct Case {
    const char* cgroup;
    const char* says;
  } cases[] = {
      {"/badstat", "/v1/memory/badstat/memory.stat: line 3 \"pgfault abc\": value is not a number"},
      {"/cutstat", "/v1/memory/cutstat/memory.stat: truncated"},
      {"/cutusage", "/v1/memory/cutusage/memory.usage_in_bytes: truncated"},
      {"/badlimit", "/v1/memory/badlimit/memory.limit_in_bytes: \"-1\" is not a number"},
  };
  for (const Case& c : cases) {
    auto stats = ReadMemoryStats(V1Layout(), c.cgroup);
    ASSERT_FALSE(stats.ok()) << c.cgroup;
    EXPECT_EQ(stats.status().code(), absl::StatusCode::kInvalidArgument) << stats.status();
    EXPECT_TRUE(Contains(stats.status().message(), c.says)) << stats.status();
  }
}

TEST(MemoryStatsTest, V1MissingRequiredFilesAreNotFound) {
  auto nostat = ReadMemoryStats(V1Layout(), "/nostat");
  ASSERT_FALSE(nostat.ok());
  EXPECT_EQ(nostat.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(nostat.status().message(), "/v1/memory/nostat/memory.stat"))
      << nostat.status();

  auto gone = ReadMemoryStats(V1Layout(), "/gone");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(gone.status().message(), "/v1/memory/gone/memory.usage_in_bytes"))
      << gone.status();

  CgroupLayout unmounted = V1Layout();
  unmounted.v1_roots.clear();
  auto none = ReadMemoryStats(unmounted, "/job");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
}

TEST(MemoryStatsTest, ReadsV2Cgroup) {
  auto stats = ReadMemoryStats(V2Layout(), "/job");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_bytes, 473706496u);
  EXPECT_EQ(stats->limit_bytes, 536870912u);
  EXPECT_EQ(stats->high_bytes, 503316480u);
  EXPECT_EQ(stats->swap_bytes, 8192u);
  EXPECT_EQ(stats->peak_bytes, 536563712u);
  EXPECT_EQ(stats->inactive_file_bytes, 120422400u);
  EXPECT_EQ(stats->working_set_bytes, 473706496u - 120422400u);
  EXPECT_EQ(stats->pgfault, 9134573u);
  EXPECT_EQ(stats->pgmajfault, 1422u);
  const std::map<std::string, uint64_t> events = {
      {"low", 0}, {"high", 321}, {"max", 57}, {"oom", 2}, {"oom_kill", 1}, {"oom_group_kill", 0}};
  EXPECT_EQ(stats->events, events);
}

TEST(MemoryStatsTest, V2OldKernelUnlimitedWithoutPeakOrSwap) {
  auto stats = ReadMemoryStats(V2Layout(), "/old_kernel");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->usage_bytes, 1052672u);
  EXPECT_FALSE(stats->limit_bytes.has_value());  // "max"
  EXPECT_FALSE(stats->high_bytes.has_value());   // "max"
  EXPECT_FALSE(stats->swap_bytes.has_value());
  EXPECT_FALSE(stats->peak_bytes.has_value());
  EXPECT_EQ(stats->inactive_file_bytes, 278528u);
  EXPECT_EQ(stats->working_set_bytes, 1052672u - 278528u);
  EXPECT_EQ(stats->pgfault, 2713u);
  EXPECT_EQ(stats->pgmajfault, 0u);
  EXPECT_EQ(stats->events.size(), 5u);
  EXPECT_EQ(stats->events.at("oom_kill"), 0u);
}

TEST(MemoryStatsTest, V2BrokenFilesAreErrorsNamingThem) {
  auto max = ReadMemoryStats(V2Layout(), "/badmax");
  ASSERT_FALSE(max.ok());
  EXPECT_TRUE(Contains(max.status().message(), "/v2/badmax/memory.max: \"unlimited\""))
      << max.status();

  auto events = ReadMemoryStats(V2Layout(), "/badevents");
  ASSERT_FALSE(events.ok());
  EXPECT_TRUE(Contains(events.status().message(), "/v2/badevents/memory.events: line 3 \"max\""))
      << events.status();
}

TEST(MemoryStatsTest, V2WithoutMemoryControllerIsNotFoundSayingSo) {
  auto stats = ReadMemoryStats(V2Layout(), "/nomem");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(stats.status().message(), "/v2/nomem/memory.current")) << stats.status();
  EXPECT_TRUE(Contains(stats.status().message(), "memory controller")) << stats.status();
}

}  // namespace
}  // namespace stagewatch
