// The cpuset a run asks for: lists parsed as the kernel writes them, kept in one form, and what
// the host has, from fixture /sys trees.
#include "runs/cpuset_request.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;

std::string Canonical(const std::string& text) {
  absl::StatusOr<std::string> list = CanonicalCpuList(text, "--cpuset-cpus");
  return list.ok() ? *list : "error: " + std::string(list.status().message());
}

TEST(CpusetRequestTest, ListsAreKeptSortedWithRunsAsRanges) {
  EXPECT_EQ(Canonical("1"), "1");
  EXPECT_EQ(Canonical("1,0"), "0-1");
  EXPECT_EQ(Canonical(" 0-3, 8 ,2"), "0-3,8");
  EXPECT_EQ(Canonical("5,3,4,9-9,11"), "3-5,9,11");
  EXPECT_EQ(Canonical("0-65535"), "0-65535");
}

TEST(CpusetRequestTest, WhatIsNotAListSaysWhatIsWrongInIt) {
  EXPECT_EQ(Canonical("1-"), "error: --cpuset-cpus \"1-\" is not a list of CPUs: the range \"1-\" "
                             "has no end; write numbers and ranges such as 0-3,8");
  EXPECT_THAT(Canonical("3-1"), HasSubstr("the range \"3-1\" runs backwards"));
  EXPECT_THAT(Canonical(""), HasSubstr("it is empty"));
  EXPECT_THAT(Canonical("0,,1"), HasSubstr("it has an empty item"));
  EXPECT_THAT(Canonical("-1"), HasSubstr("\"\" is not a number from 0 to 65535"));
  EXPECT_THAT(Canonical("+1"), HasSubstr("\"+1\" is not a number"));
  EXPECT_THAT(Canonical("65536"), HasSubstr("\"65536\" is not a number from 0 to 65535"));
  EXPECT_THAT(Canonical("0-7:2/4"), HasSubstr("\"7:2/4\" is not a number"));
  EXPECT_THAT(CanonicalCpuList("x", "--cpuset-mems").status().message(),
              HasSubstr("is not a list of NUMA nodes"));
}

TEST(CpusetRequestTest, CountsWhatACanonicalListHolds) {
  EXPECT_EQ(CpuListCount("0-1,4"), 3);
  EXPECT_EQ(CpuListCount("7"), 1);
  EXPECT_EQ(CpuListCount("x"), 0);
}

TEST(CpusetRequestTest, TheHostsOnlineCpusAndNodesAndNodeZeroWithoutNuma) {
  testing::TempDir dir;
  const std::string sys = dir.file("sys");
  std::filesystem::create_directories(sys + "/devices/system/cpu");
  std::ofstream(sys + "/devices/system/cpu/online") << "0-1\n";
  EXPECT_EQ(HostOnlineList(CpusetKind::kCpus, sys), "0-1");
  EXPECT_EQ(HostOnlineList(CpusetKind::kMems, sys), "0") << "no node directory: node 0";
  EXPECT_EQ(HostHasText(CpusetKind::kMems, sys), "this host's online NUMA nodes are 0");
  std::filesystem::create_directories(sys + "/devices/system/node");
  std::ofstream(sys + "/devices/system/node/online") << "0-1\n";
  EXPECT_EQ(HostHasText(CpusetKind::kMems, sys), "this host's online NUMA nodes are 0-1");
  EXPECT_EQ(HostHasText(CpusetKind::kCpus, sys), "this host's online CPUs are 0-1");
}

}  // namespace
}  // namespace stagewatch
