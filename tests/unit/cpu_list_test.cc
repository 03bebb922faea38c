#include "cgroup/cpu_list.h"

#include <filesystem>
#include <fstream>

#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::Contains;

TEST(CpuListTest, ParsesRangesAndSingles) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n", "f").value(),
            (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("1\n", "f").value(), (std::vector<int>{1}));
  EXPECT_EQ(ParseCpuList("5,1-2,2\n", "f").value(), (std::vector<int>{1, 2, 5}));  // sorted, once
}

TEST(CpuListTest, BlankIsTheEmptyList) {
  // A v1 cpuset cgroup before its cpuset.cpus is written.
  EXPECT_TRUE(ParseCpuList("\n", "f").value().empty());
  EXPECT_TRUE(ParseCpuList("", "f").value().empty());
}

TEST(CpuListTest, BadTextNamesTheFileAndTheText) {
  for (const char* text : {"3-1\n", "0-\n", "-1\n", "a\n", "0,,1\n", "0,\n", "+1\n", "0-3:2\n",
                           "1 2\n", "70000\n", "0-99999999999\n"}) {
    auto ids = ParseCpuList(text, "/cg/cpuset.cpus.effective");
    ASSERT_FALSE(ids.ok()) << text;
    EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(Contains(ids.status().message(), "/cg/cpuset.cpus.effective")) << ids.status();
    EXPECT_TRUE(Contains(ids.status().message(), "such as \"0-3,8,10-11\"")) << ids.status();
  }
}

TEST(CpuListTest, FormatsAsTheKernelDoes) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({11, 10, 3, 3}), "3,10-11");
  EXPECT_EQ(FormatCpuList({1}), "1");
  EXPECT_EQ(FormatCpuList({}), "");
  for (const char* text : {"0-63", "0,2,4", "1-2,5-7,9"}) {
    EXPECT_EQ(FormatCpuList(ParseCpuList(text, "f").value()), text);
  }
}

TEST(CpuListTest, ReadsAFileAndSaysWhenItIsMissing) {
  testing::TempDir dir;
  std::ofstream(dir.file("online")) << "0-1\n";
  EXPECT_EQ(ReadCpuListFile(dir.file("online")).value(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(absl::IsNotFound(ReadCpuListFile(dir.file("absent")).status()));
}

}  // namespace
}  // namespace stagewatch
