// LimitWatch on plain files: inotify tells a write to a watched file as it does on cgroupfs
// (tests/privileged/limit_watch_sampler_test.cc has the real limits).
#include "cgroup/limit_watch.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "runs_test_util.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TempDir;
using testing::WriteFile;

// Two cgroup-like directories, each with memory.max and memory.high.
struct TwoCgroups {
  TempDir root;
  std::string a = root.file("a"), b = root.file("b");
  TwoCgroups() {
    for (const std::string& dir : {a, b}) {
      std::filesystem::create_directory(dir);
      WriteFile(dir + "/memory.max", "max\n");
      WriteFile(dir + "/memory.high", "max\n");
    }
  }
};

TEST(LimitWatchTest, TellsWhichCgroupsLimitFileWasWrittenOnceEach) {
  TwoCgroups cgroups;
  LimitWatch watch({"memory.max", "memory.high"});
  ASSERT_TRUE(watch.Add(1, cgroups.a));
  ASSERT_TRUE(watch.Add(2, cgroups.b));
  EXPECT_TRUE(watch.Take().ids.empty());  // nothing written yet

  WriteFile(cgroups.b + "/memory.high", "1048576\n");
  LimitWatch::Written written = watch.Take();
  EXPECT_EQ(written.ids, (absl::flat_hash_set<uint64_t>{2}));
  EXPECT_FALSE(written.all);
  EXPECT_TRUE(watch.Take().ids.empty());  // told once

  WriteFile(cgroups.a + "/memory.max", "2097152\n");
  WriteFile(cgroups.b + "/memory.max", "2097152\n");
  EXPECT_EQ(watch.Take().ids, (absl::flat_hash_set<uint64_t>{1, 2}));
}

TEST(LimitWatchTest, ARemovedCgroupIsNoLongerToldAndAMissingFileIsNotWatched) {
  TwoCgroups cgroups;
  LimitWatch watch({"memory.max", "memory.high"});
  ASSERT_TRUE(watch.Add(1, cgroups.a));
  ASSERT_TRUE(watch.Add(2, cgroups.b));
  watch.Remove(1);
  EXPECT_FALSE(watch.watched(1));
  WriteFile(cgroups.a + "/memory.max", "2097152\n");
  EXPECT_TRUE(watch.Take().ids.empty());

  // A directory without one of the files (a cgroup without the memory controller): not
  // watched at all, so that its caller polls it.
  std::filesystem::remove(cgroups.b + "/memory.high");
  watch.Remove(2);
  EXPECT_FALSE(watch.Add(2, cgroups.b));
  EXPECT_FALSE(watch.watched(2));
  EXPECT_FALSE(watch.Add(3, ""));  // no memory hierarchy
  EXPECT_EQ(watch.cgroups(), 0u);
}

}  // namespace
}  // namespace stagewatch
