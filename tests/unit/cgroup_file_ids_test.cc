// The ids discovered runs keep for their files: one id for the same file of every cgroup, in
// each hierarchy; none for a file outside the cgroup's directory, nor past the bound.
#include "cgroup/cgroup_file_ids.h"

#include <string>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

TEST(CgroupFileIdsTest, TheSameFileOfEveryCgroupHasOneId) {
  CgroupFileIds ids;
  const auto usage = ids.Of("/sys/fs/cgroup/memory/a/b/memory.usage_in_bytes", "/a/b");
  ASSERT_TRUE(usage);
  EXPECT_EQ(ids.Of("/sys/fs/cgroup/memory/c/memory.usage_in_bytes", "/c"), usage);
  EXPECT_EQ(ids.Of("/sys/fs/cgroup/memory/memory.usage_in_bytes", "/"), usage);

  const auto limit = ids.Of("/sys/fs/cgroup/memory/c/memory.limit_in_bytes", "/c");
  const auto cpu_stat = ids.Of("/sys/fs/cgroup/cpu/c/cpu.stat", "/c");
  const auto v2_cpu_stat = ids.Of("/sys/fs/cgroup/unified/c/cpu.stat", "/c");
  ASSERT_TRUE(limit && cpu_stat && v2_cpu_stat);
  EXPECT_NE(*limit, *usage);
  EXPECT_NE(*cpu_stat, *v2_cpu_stat);  // one name, two hierarchies
  EXPECT_EQ(ids.size(), 4u);
}

TEST(CgroupFileIdsTest, AFileOutsideTheCgroupsDirectoryHasNone) {
  CgroupFileIds ids;
  EXPECT_FALSE(ids.Of("/sys/fs/cgroup/memory/other/memory.usage_in_bytes", "/a"));
  EXPECT_FALSE(ids.Of("/sys/fs/cgroup/memory/a/sub/memory.usage_in_bytes", "/a"));
  EXPECT_FALSE(ids.Of("memory.usage_in_bytes", "/a"));
  EXPECT_EQ(ids.size(), 0u);
}

TEST(CgroupFileIdsTest, PastTheBoundNoNewIdIsGivenAndTheKnownOnesStay) {
  CgroupFileIds ids;
  for (size_t i = 0; i < CgroupFileIds::kMaxIds; i++) {
    ASSERT_EQ(ids.Of("/r/c/f" + std::to_string(i), "/c"), i);
  }
  EXPECT_FALSE(ids.Of("/r/c/one_more", "/c"));
  EXPECT_EQ(ids.Of("/r/d/f7", "/d"), 7u);
  EXPECT_EQ(ids.size(), CgroupFileIds::kMaxIds);
}

}  // namespace
}  // namespace stagewatch
