// Where `stagewatch run` makes its cgroup and what it writes there, on fixture trees standing
// in for a pure cgroup2 host (which this machine cannot be) and for a hybrid one.
#include "runs/run_cgroup.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::vector<std::string> Writes(const std::vector<CgroupWrite>& writes, const std::string& root) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : writes) out.push_back(w.file.substr(root.size()) + " = " + w.value);
  return out;
}

RunCgroupSpec Spec() {
  RunCgroupSpec spec;
  spec.stage = "train";
  spec.run_id = "r1";
  return spec;
}

class V2PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.file("unified");
    layout_.mode = CgroupMode::kV2;
    layout_.key = CGROUP_KEY_DEFAULT;
    layout_.key_root = layout_.v2_root = root_;
    layout_.v2_has_memory = true;
    Put(root_ + "/jobs/cgroup.controllers", "cpuset cpu io memory pids\n");
    Put(root_ + "/jobs/cgroup.subtree_control", "cpu\n");
  }
  TempDir dir_;
  std::string root_;
  CgroupLayout layout_;
  const std::string self_ = "0::/jobs\n";
};

TEST_F(V2PlanTest, EnablesControllersDownThePathAndLimitsTheLeaf) {
  RunCgroupSpec spec = Spec();
  spec.limits.memory_max_bytes = 200 << 20;
  spec.limits.memory_high_bytes = 150 << 20;
  spec.limits.cpu_max_cores = 0.2;
  spec.limits.cpu_weight = 200;
  absl::StatusOr<RunCgroupPlan> plan = PlanRunCgroup(layout_, self_, spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->hierarchies.size(), 1u);
  EXPECT_EQ(plan->hierarchies[0].path, "/jobs/stagewatch/train/r1");
  // cpu is enabled at /jobs already; the run's own cgroup is a leaf and enables nothing.
  EXPECT_THAT(Writes(plan->enable, root_),
              ElementsAre("/jobs/cgroup.subtree_control = +memory",
                          "/jobs/stagewatch/cgroup.subtree_control = +memory",
                          "/jobs/stagewatch/train/cgroup.subtree_control = +memory",
                          "/jobs/stagewatch/cgroup.subtree_control = +cpu",
                          "/jobs/stagewatch/train/cgroup.subtree_control = +cpu"));
  EXPECT_THAT(Writes(plan->limits, root_),
              ElementsAre("/jobs/stagewatch/train/r1/memory.max = 209715200",
                          "/jobs/stagewatch/train/r1/memory.high = 157286400",
                          "/jobs/stagewatch/train/r1/cpu.max = 20000 100000",
                          "/jobs/stagewatch/train/r1/cpu.weight = 200"));
}

TEST_F(V2PlanTest, AMissingControllerFailsOnlyWhenALimitNeedsIt) {
  Put(root_ + "/jobs/cgroup.controllers", "cpu pids\n");
  RunCgroupSpec spec = Spec();
  absl::StatusOr<RunCgroupPlan> no_limit = PlanRunCgroup(layout_, self_, spec);
  ASSERT_TRUE(no_limit.ok()) << no_limit.status();
  spec.limits.memory_max_bytes = 1 << 30;
  absl::StatusOr<RunCgroupPlan> limited = PlanRunCgroup(layout_, self_, spec);
  ASSERT_FALSE(limited.ok());
  EXPECT_THAT(limited.status().message(), HasSubstr("memory controller is not available"));
  EXPECT_THAT(limited.status().message(), HasSubstr("--cgroup.parent"));
}

TEST_F(V2PlanTest, RefusesARunIdWhoseCgroupExistsAndAMissingParent) {
  std::filesystem::create_directories(root_ + "/jobs/stagewatch/train/r1");
  absl::StatusOr<RunCgroupPlan> exists = PlanRunCgroup(layout_, self_, Spec());
  ASSERT_FALSE(exists.ok());
  EXPECT_EQ(exists.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(exists.status().message(), HasSubstr("exists already"));

  RunCgroupSpec spec = Spec();
  spec.parent = "/nowhere";
  absl::StatusOr<RunCgroupPlan> missing = PlanRunCgroup(layout_, self_, spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("does not exist"));
  spec.parent = "relative";
  EXPECT_THAT(PlanRunCgroup(layout_, self_, spec).status().message(), HasSubstr("not absolute"));
}

TEST(HybridPlanTest, MakesTheCgroupBeneathItsOwnInEachV1HierarchyAndTheCgroup2Mirror) {
  TempDir dir;
  CgroupLayout layout;
  layout.mode = CgroupMode::kHybrid;
  layout.key = CGROUP_KEY_V1_MEMORY;
  layout.key_root = layout.v1_memory_root = dir.file("memory");
  layout.v1_roots = {{"memory", dir.file("memory")}, {"cpu", dir.file("cpu")},
                     {"cpuacct", dir.file("cpuacct")}};
  layout.v2_root = dir.file("unified");
  for (const char* d : {"memory/svc/job", "cpu", "cpuacct", "unified/svc"}) {
    std::filesystem::create_directories(dir.file(d));
  }
  const std::string self = "4:memory:/svc/job\n2:cpuacct:/\n1:cpu:/\n0::/svc\n";
  RunCgroupSpec spec = Spec();
  spec.limits.memory_max_bytes = 200 << 20;
  spec.limits.memory_high_bytes = 100 << 20;
  spec.limits.cpu_max_cores = 0.2;
  spec.limits.cpu_weight = 200;
  absl::StatusOr<RunCgroupPlan> plan = PlanRunCgroup(layout, self, spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> dirs;
  for (const RunHierarchy& h : plan->hierarchies) dirs.push_back(h.dir().substr(dir.path().size()));
  EXPECT_THAT(dirs, ElementsAre("/memory/svc/job/stagewatch/train/r1", "/cpu/stagewatch/train/r1",
                                "/cpuacct/stagewatch/train/r1", "/unified/svc/stagewatch/train/r1"));
  EXPECT_TRUE(plan->enable.empty()) << "v1 has no subtree_control";
  EXPECT_THAT(Writes(plan->limits, dir.path()),
              ElementsAre("/memory/svc/job/stagewatch/train/r1/memory.limit_in_bytes = 209715200",
                          "/memory/svc/job/stagewatch/train/r1/memory.soft_limit_in_bytes = 104857600",
                          "/cpu/stagewatch/train/r1/cpu.cfs_period_us = 100000",
                          "/cpu/stagewatch/train/r1/cpu.cfs_quota_us = 20000",
                          "/cpu/stagewatch/train/r1/cpu.shares = 2048"));

  // A parent given as a directory of the keyed hierarchy is the same path everywhere.
  for (const char* d : {"memory/p", "cpu/p", "cpuacct/p", "unified/p"}) {
    std::filesystem::create_directories(dir.file(d));
  }
  spec.parent = dir.file("memory/p");
  absl::StatusOr<RunCgroupPlan> given = PlanRunCgroup(layout, self, spec);
  ASSERT_TRUE(given.ok()) << given.status();
  for (const RunHierarchy& h : given->hierarchies) EXPECT_EQ(h.path, "/p/stagewatch/train/r1");
}

TEST_F(V2PlanTest, ACpusetIsWrittenInTheRunsCgroupWithTheControllerEnabledAbove) {
  RunCgroupSpec spec = Spec();
  EXPECT_TRUE(PlanRunCgroup(layout_, self_, spec)->cpuset_checks.empty());
  for (const CgroupWrite& w : PlanRunCgroup(layout_, self_, spec)->enable) {
    EXPECT_NE(w.value, "+cpuset") << "only a run that asks for a cpuset enables the controller";
  }
  spec.limits.cpuset_cpus = "1";
  spec.limits.cpuset_mems = "0";
  absl::StatusOr<RunCgroupPlan> plan = PlanRunCgroup(layout_, self_, spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> enabled;
  for (const CgroupWrite& w : plan->enable) {
    if (w.value == "+cpuset") enabled.push_back(w.file.substr(root_.size()));
  }
  EXPECT_THAT(enabled, ElementsAre("/jobs/cgroup.subtree_control",
                                   "/jobs/stagewatch/cgroup.subtree_control",
                                   "/jobs/stagewatch/train/cgroup.subtree_control"));
  EXPECT_THAT(Writes(plan->limits, root_),
              ElementsAre("/jobs/stagewatch/train/r1/cpuset.cpus = 1",
                          "/jobs/stagewatch/train/r1/cpuset.mems = 0"));
  EXPECT_TRUE(plan->cpuset_inherit.empty()) << "cgroup2 children take the parent's by default";
  ASSERT_EQ(plan->cpuset_checks.size(), 2u);
  EXPECT_EQ(plan->cpuset_checks[0].file.substr(root_.size()),
            "/jobs/stagewatch/train/r1/cpuset.cpus.effective");

  Put(root_ + "/jobs/cgroup.controllers", "cpu io memory pids\n");
  absl::StatusOr<RunCgroupPlan> undelegated = PlanRunCgroup(layout_, self_, spec);
  EXPECT_THAT(undelegated.status().message(),
              HasSubstr("the cgroup2 cpuset controller is not available in"));
}

TEST(HybridPlanTest, ACpusetRunJoinsTheV1CpusetHierarchyWhoseNewCgroupsTakeTheirParentsCpus) {
  TempDir dir;
  CgroupLayout layout;
  layout.mode = CgroupMode::kHybrid;
  layout.key = CGROUP_KEY_V1_MEMORY;
  layout.key_root = layout.v1_memory_root = dir.file("memory");
  layout.v1_roots = {{"memory", dir.file("memory")}, {"cpu", dir.file("cpu")},
                     {"cpuset", dir.file("cpuset")}};
  for (const char* d : {"memory/svc", "cpu", "cpuset"}) {
    std::filesystem::create_directories(dir.file(d));
  }
  const std::string self = "4:memory:/svc\n3:cpuset:/\n1:cpu:/\n";
  RunCgroupSpec spec = Spec();
  absl::StatusOr<RunCgroupPlan> plain = PlanRunCgroup(layout, self, spec);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const RunHierarchy& h : plain->hierarchies) EXPECT_NE(h.name, "cpuset");
  spec.limits.cpuset_cpus = "0-1";
  absl::StatusOr<RunCgroupPlan> plan = PlanRunCgroup(layout, self, spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> dirs;
  for (const RunHierarchy& h : plan->hierarchies) dirs.push_back(h.dir().substr(dir.path().size()));
  EXPECT_THAT(dirs, ElementsAre("/memory/svc/stagewatch/train/r1", "/cpu/stagewatch/train/r1",
                                "/cpuset/stagewatch/train/r1"));
  std::vector<std::string> inherit;
  for (const std::string& d : plan->cpuset_inherit) inherit.push_back(d.substr(dir.path().size()));
  EXPECT_THAT(inherit, ElementsAre("/cpuset/stagewatch", "/cpuset/stagewatch/train",
                                   "/cpuset/stagewatch/train/r1"));
  EXPECT_THAT(Writes(plan->limits, dir.path()),
              ElementsAre("/cpuset/stagewatch/train/r1/cpuset.cpus = 0-1"));
  ASSERT_EQ(plan->cpuset_checks.size(), 1u);
  EXPECT_EQ(plan->cpuset_checks[0].file.substr(dir.path().size()),
            "/cpuset/stagewatch/train/r1/cpuset.effective_cpus");

  layout.v1_roots.erase("cpuset");
  EXPECT_THAT(PlanRunCgroup(layout, self, spec).status().message(),
              HasSubstr("need the cpuset controller"));

  // Mounted with cpu, the cpuset hierarchy is joined by every run: its new cgroups inherit even
  // when no cpuset is asked for, or the command could not join them.
  layout.v1_roots["cpuset"] = dir.file("cpu");
  spec.limits.cpuset_cpus.reset();
  absl::StatusOr<RunCgroupPlan> comounted = PlanRunCgroup(layout, self, spec);
  ASSERT_TRUE(comounted.ok()) << comounted.status();
  ASSERT_EQ(comounted->cpuset_inherit.size(), 3u);
  EXPECT_EQ(comounted->cpuset_inherit.back().substr(dir.path().size()), "/cpu/stagewatch/train/r1");
  EXPECT_TRUE(comounted->limits.empty());
}

}  // namespace
}  // namespace stagewatch
