#include "cgroup/cgroup_tree.h"

#include <string>
#include <string_view>
#include <vector>

#include "cgroup/memcg_counters.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const std::string kV2 = std::string(STAGEWATCH_FIXTURES_DIR) + "/cgroup/tree/v2/sys/fs/cgroup";
const std::string kV1Memory =
    std::string(STAGEWATCH_FIXTURES_DIR) + "/cgroup/tree/hybrid/sys/fs/cgroup/memory";

bool Contains(absl::string_view haystack, absl::string_view needle) {
  return haystack.find(needle) != absl::string_view::npos;
}

TEST(CgroupTreeTest, ReadsWholeFile) {
  auto text = ReadCgroupFile(kV2 + "/job/cpu.stat");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\nnr_periods 10\n"
            "nr_throttled 3\nthrottled_usec 5000\n");
}

TEST(CgroupTreeTest, MissingFileIsNotFoundNamingTheFile) {
  auto text = ReadCgroupFile(kV2 + "/job/no.such.file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(text.status().message(), "no.such.file")) << text.status();
  EXPECT_TRUE(Contains(text.status().message(), "No such file")) << text.status();
}

TEST(CgroupTreeTest, ParsesFlatKeyedValues) {
  const std::string stat = "usage_usec 123456\nnr_throttled 3\nthrottled_usec 5000\n";
  EXPECT_EQ(ParseFlatKeyedValue(stat, "usage_usec", "cpu.stat").value(), 123456u);
  EXPECT_EQ(ParseFlatKeyedValue(stat, "nr_throttled", "cpu.stat").value(), 3u);
  EXPECT_EQ(ParseFlatKeyedValue(stat, "throttled_usec", "cpu.stat").value(), 5000u);
  // Keys are whole words: "oom" must not match "oom_kill" or the reverse.
  const std::string events = "oom 3\noom_kill 2\n";
  EXPECT_EQ(ParseFlatKeyedValue(events, "oom", "memory.events").value(), 3u);
  EXPECT_EQ(ParseFlatKeyedValue(events, "oom_kill", "memory.events").value(), 2u);
  EXPECT_EQ(ParseFlatKeyedValue("big 18446744073709551615", "big", "f").value(),
            18446744073709551615u);
}

TEST(CgroupTreeTest, MissingKeyNamesFileAndKey) {
  auto value = ParseFlatKeyedValue("oom 3\n", "oom_kill", "/x/memory.events");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(value.status().message(), "/x/memory.events"));
  EXPECT_TRUE(Contains(value.status().message(), "oom_kill"));
}

TEST(CgroupTreeTest, NonNumericValueNamesFileAndKey) {
  for (const char* text :
       {"oom_kill lots\n", "oom_kill -1\n", "oom_kill\n", "oom_kill +1\n", "oom_kill 1.5\n"}) {
    auto value = ParseFlatKeyedValue(text, "oom_kill", "memory.events");
    ASSERT_FALSE(value.ok()) << text;
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(Contains(value.status().message(), "memory.events"));
    EXPECT_TRUE(Contains(value.status().message(), "oom_kill"));
  }
}

TEST(CgroupTreeTest, LineWalkStopsAtTheFirstBadLineNamingItsNumberAndText) {
  std::vector<std::string> taken;
  auto walk = [&taken](std::string_view contents) {
    taken.clear();
    return ForEachCgroupFileLine(contents, "/x/cgroup.procs",
                                 [&taken](std::string_view line) -> const char* {
                                   if (line.starts_with("bad")) return "not wanted";
                                   taken.emplace_back(line);
                                   return nullptr;
                                 });
  };
  ASSERT_TRUE(walk("1\n\n3\n").ok());
  EXPECT_EQ(taken, (std::vector<std::string>{"1", "", "3"}));

  absl::Status bad = walk("1\nbad\t2\n3\n");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "/x/cgroup.procs: line 2 \"bad\\t2\": not wanted");
  EXPECT_EQ(taken, std::vector<std::string>{"1"});  // nothing after the bad line

  // An incomplete file is refused before any line is taken.
  EXPECT_EQ(walk("1\n2").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(walk("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(taken.empty());
}

TEST(MemcgCountersTest, V2ReadsLocalEvents) {
  // memory.events says 7 (hierarchical), memory.events.local says 2: local wins.
  auto kills = ReadOomKillCount(kV2 + "/job", CGROUP_KEY_DEFAULT);
  ASSERT_TRUE(kills.ok()) << kills.status();
  EXPECT_EQ(*kills, 2u);
}

TEST(MemcgCountersTest, V2FallsBackToEventsWithoutLocalFile) {
  auto kills = ReadOomKillCount(kV2 + "/old_kernel", CGROUP_KEY_DEFAULT);
  ASSERT_TRUE(kills.ok()) << kills.status();
  EXPECT_EQ(*kills, 1u);
}

TEST(MemcgCountersTest, V2BrokenLocalFileIsAnErrorNotAFallback) {
  auto kills = ReadOomKillCount(kV2 + "/broken", CGROUP_KEY_DEFAULT);
  ASSERT_FALSE(kills.ok());
  EXPECT_EQ(kills.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(kills.status().message(), "memory.events.local"));
}

TEST(MemcgCountersTest, V1ReadsOomControl) {
  auto kills = ReadOomKillCount(kV1Memory + "/job", CGROUP_KEY_V1_MEMORY);
  ASSERT_TRUE(kills.ok()) << kills.status();
  EXPECT_EQ(*kills, 4u);
}

TEST(MemcgCountersTest, V1WithoutOomKillLineIsAnError) {
  auto kills = ReadOomKillCount(kV1Memory + "/old_kernel", CGROUP_KEY_V1_MEMORY);
  ASSERT_FALSE(kills.ok());
  EXPECT_EQ(kills.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(kills.status().message(), "memory.oom_control"));
}

TEST(MemcgCountersTest, MissingCgroupIsNotFound) {
  auto kills = ReadOomKillCount(kV2 + "/gone", CGROUP_KEY_DEFAULT);
  ASSERT_FALSE(kills.ok());
  EXPECT_EQ(kills.status().code(), absl::StatusCode::kNotFound);
  kills = ReadOomKillCount(kV1Memory + "/gone", CGROUP_KEY_V1_MEMORY);
  ASSERT_FALSE(kills.ok());
  EXPECT_EQ(kills.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace stagewatch
