// A dead launcher's run cgroup found again from its keyed path alone, on a fixture tree standing
// in for a hybrid host whose launcher sat at different depths in its hierarchies (as here:
// /process_api/… in memory, / in cpu), and removed with its sub-cgroups and the shared stage
// directories, never the parent.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runs/run_cgroup.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::TempDir;

class AdoptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_ = dir_.file("memory");
    cpu_ = dir_.file("cpu");
    unified_ = dir_.file("unified");
    layout_.mode = CgroupMode::kHybrid;
    layout_.key = CGROUP_KEY_V1_MEMORY;
    layout_.key_root = layout_.v1_memory_root = memory_;
    layout_.v1_roots = {{"memory", memory_}, {"cpu", cpu_}, {"cpuacct", cpu_}};
    layout_.v2_root = unified_;
  }
  static void Make(const std::string& dir) { std::filesystem::create_directories(dir); }
  static bool Exists(const std::string& dir) { return std::filesystem::exists(dir); }

  TempDir dir_;
  std::string memory_, cpu_, unified_;
  CgroupLayout layout_;
};

TEST_F(AdoptTest, FindsTheRunInEveryHierarchyBeneathTheNearestAncestorThatHasIt) {
  const std::string run = "/jobs/alice/stagewatch/train/r1";
  Make(memory_ + run + "/step_0");           // a sub-cgroup its command made
  Make(cpu_ + "/stagewatch/train/r1");        // the launcher sat at / in cpu and cpuacct
  Make(unified_ + "/jobs/stagewatch/train/r1");  // and at /jobs in the cgroup2 mirror
  Make(unified_ + "/jobs/stagewatch/train/r2");  // another run of the stage, going on
  absl::StatusOr<std::unique_ptr<RunCgroup>> adopted = RunCgroup::Adopt(layout_, run);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  const std::vector<RunHierarchy>& hs = (*adopted)->plan().hierarchies;
  ASSERT_EQ(hs.size(), 3u);
  EXPECT_EQ(hs[0].name, "memory");
  EXPECT_EQ(hs[0].path, run);
  EXPECT_EQ(hs[1].name, "cpu");
  EXPECT_EQ(hs[1].path, "/stagewatch/train/r1");
  EXPECT_EQ(hs[2].name, "unified");
  EXPECT_EQ(hs[2].path, "/jobs/stagewatch/train/r1");
  const CgroupLayout& reader = (*adopted)->reader_layout();
  EXPECT_EQ(reader.v1_roots.at("cpuacct"), cpu_ + "/stagewatch/train/r1");
  EXPECT_EQ(reader.v2_root, unified_ + "/jobs/stagewatch/train/r1");
  EXPECT_TRUE((*adopted)->HoldsNoTask() == false) << "no cgroup.procs here: not known empty";

  const absl::Status removed = (*adopted)->Remove();
  ASSERT_TRUE(removed.ok()) << removed;
  EXPECT_FALSE(Exists(memory_ + "/jobs/alice/stagewatch")) << "the run, its sub-cgroup, the "
                                                              "shared directories";
  EXPECT_TRUE(Exists(memory_ + "/jobs/alice")) << "never the parent";
  EXPECT_FALSE(Exists(cpu_ + "/stagewatch"));
  EXPECT_FALSE(Exists(unified_ + "/jobs/stagewatch/train/r1"));
  EXPECT_TRUE(Exists(unified_ + "/jobs/stagewatch/train/r2")) << "another run's stays";
}

TEST_F(AdoptTest, AGoneRunIsNotFoundAndAnAdoptedOneIsRemovedOnlyWhenAsked) {
  EXPECT_TRUE(absl::IsNotFound(RunCgroup::Adopt(layout_, "/stagewatch/train/gone").status()));
  EXPECT_FALSE(RunCgroup::Adopt(layout_, "/train").ok()) << "not a run's path";
  Make(memory_ + "/stagewatch/train/r1");
  { ASSERT_TRUE(RunCgroup::Adopt(layout_, "/stagewatch/train/r1").ok()); }
  EXPECT_TRUE(Exists(memory_ + "/stagewatch/train/r1"));
}

}  // namespace
}  // namespace stagewatch
