#include "cgroup/cpuset.h"

#include <filesystem>
#include <fstream>

#include "cgroup_file_tree.h"
#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::Contains;

// A host of four CPUs on two nodes, for cgroups without a cpuset anywhere.
NumaTopology Host() {
  NumaTopology host;
  host.node_cpus = {{0, {0, 1}}, {1, {2, 3}}};
  host.online_cpus = {0, 1, 2, 3};
  host.memory_nodes = {0, 1};
  return host;
}

class CpusetTest : public ::testing::Test, public testing::CgroupFileTree {
 protected:
  // Where `hierarchy` ("memory", "cpuset", "unified") is in the tree.
  std::string Root(const std::string& hierarchy) const {
    return std::filesystem::path(CgroupFileTree::V1().key_root).parent_path().string() + "/" +
           hierarchy;
  }
  // Hybrid: keyed on v1 memory, with a v1 cpuset hierarchy at cpuset/.
  CgroupLayout V1() const {
    CgroupLayout layout = CgroupFileTree::V1();
    layout.v2_root = Root("unified");
    layout.v1_roots = {{"memory", Root("memory")}, {"cpuset", Root("cpuset")}};
    return layout;
  }
};

TEST_F(CpusetTest, V1ReadsTheCpusetHierarchysEffectiveFiles) {
  Write("cpuset", "/", {{"cpuset.effective_cpus", "0-3\n"}, {"cpuset.effective_mems", "0-1\n"}});
  Write("cpuset", "/train",
        {{"cpuset.effective_cpus", "2-3\n"}, {"cpuset.effective_mems", "1\n"},
         {"cpuset.cpus", "0-3\n"}});  // asked for more than its parent gives: effective wins
  Write("unified", "/train", {{"cpuset.cpus.effective", "0\n"}, {"cpuset.mems.effective", "0\n"}});
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(V1(), "/train", Host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(c->mems, (std::vector<int>{1}));
  EXPECT_EQ(c->dir, Root("cpuset") + "/train");
}

TEST_F(CpusetTest, V1PathWithoutAMirrorTakesItsNearestAncestors) {
  Write("cpuset", "/", {{"cpuset.effective_cpus", "0-3\n"}, {"cpuset.effective_mems", "0-1\n"}});
  Write("cpuset", "/jobs", {{"cpuset.effective_cpus", "1\n"}, {"cpuset.effective_mems", "0\n"}});
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(V1(), "/jobs/validate/run-7", Host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, (std::vector<int>{1}));
  EXPECT_EQ(c->dir, Root("cpuset") + "/jobs");
}

TEST_F(CpusetTest, V2WithoutTheControllerTakesTheNearestAncestorWithIt) {
  // cpuset enabled for /pinned's children only: /pinned/validate has the files, and
  // /pinned/validate/run-1 (the controller not enabled beneath) has none.
  Write("unified", "/", {{"cpuset.cpus.effective", "0-3\n"}, {"cpuset.mems.effective", "0-1\n"}});
  Write("unified", "/pinned/validate",
        {{"cpuset.cpus.effective", "0-1\n"}, {"cpuset.mems.effective", "0\n"}});
  Write("unified", "/pinned/validate/run-1", {{"memory.current", "0\n"}});
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(V2(), "/pinned/validate/run-1", Host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(c->mems, (std::vector<int>{0}));
  // The root's where nothing beneath has the controller.
  c = ReadEffectiveCpuset(V2(), "/other", Host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(c->dir, Root("unified"));
}

TEST_F(CpusetTest, NoCpusetAnywhereIsTheWholeHost) {
  // cgroup2 whose root has no cpuset files: the controller is bound to no hierarchy.
  Write("unified", "/train", {{"memory.current", "0\n"}});
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(V2(), "/train", Host());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(c->mems, (std::vector<int>{0, 1}));
  EXPECT_EQ(c->dir, "");
}

TEST_F(CpusetTest, BadListIsAnErrorNamingTheFile) {
  Write("unified", "/train",
        {{"cpuset.cpus.effective", "0-1\n"}, {"cpuset.mems.effective", "zero\n"}});
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(V2(), "/train", Host());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c.status().message(), "/train/cpuset.mems.effective")) << c.status();
}

}  // namespace
}  // namespace stagewatch
