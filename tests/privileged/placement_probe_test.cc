// The placement probe and the sched tracker's on-CPU time by node against the kernel's own
// counts: a task's se.nr_migrations (/proc/<pid>/sched) split by the node of the CPUs it moved
// between, and its schedstat CPU time split by the node it ran on.
//
// This host has one NUMA node, where every migration is within it: there the cross-node count
// must stay 0 and every nanosecond be on node 0. Moves across real nodes can be made only on a
// machine with two (the VM stage boots one with a CPU on each), where the same tests check
// both kinds. So that the split itself is checked here too, each test also runs with a
// topology given to the agent's side in place of the host's: every CPU a node of its own.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "migration_workload.h"
#include "signals/placement/cpu_nodes.h"
#include "signals/placement/placement_probe.h"
#include "signals/placement/placement_tracker.h"
#include "signals/sched/sched_probe.h"
#include "signals/sched/sched_tracker.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::Bouncers;
using testing::KernelPlacement;
using testing::TestCgroup;

CpuNodes HostNodes() {
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(libbpf_num_possible_cpus());
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  return nodes.ok() ? *nodes : CpuNodes{};
}

// Every CPU a node of its own (numbered as the CPU): any move is across nodes.
CpuNodes EveryCpuANode() {
  CpuNodes nodes;
  nodes.nodes.clear();
  for (int cpu = 0; cpu < libbpf_num_possible_cpus(); cpu++) {
    nodes.nodes.push_back(cpu);
    nodes.column_of_cpu.push_back(cpu);
  }
  return nodes;
}

enum class Topology { kHost, kEveryCpuANode };

class PlacementSplitTest : public ::testing::TestWithParam<Topology> {
 protected:
  static CpuNodes Nodes() {
    return GetParam() == Topology::kHost ? HostNodes() : EveryCpuANode();
  }
};

PlacementCgroupCounts CountsOf(const PlacementProbe& probe, uint64_t id) {
  for (const PlacementCgroupCounts& c : probe.Read()) {
    if (c.cgroup_id == id) return c;
  }
  return {.cgroup_id = id};
}

TEST(PlacementProbeTest, LoadsAndAttaches) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  auto probe = PlacementProbe::Start(
      {.features = testing::ProbeFeaturesForTests(), .cpu_nodes = HostNodes()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ((*probe)->statuses().size(), 1u);
  const ProbeStatus& s = (*probe)->statuses()[0];
  EXPECT_TRUE(s.attached) << s.error;
  std::printf("sched_migrate_task attach type: %s\n", s.attach_type.c_str());
}

// As where the feature probe reports BPF trampolines: tp_btf is tried first, and the raw
// tracepoint taken if the kernel refuses it.
TEST(PlacementProbeTest, TheTpBtfChoiceLoadsOrFallsBack) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  KernelFeatures features = ProbeKernelFeatures();
  features.tracing = true;
  auto probe = PlacementProbe::Start({.features = features, .cpu_nodes = HostNodes()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  const ProbeStatus& s = (*probe)->statuses()[0];
  EXPECT_TRUE(s.attached) << s.error;
  EXPECT_TRUE(s.attach_type == "tp_btf" || s.attach_type == "raw_tracepoint") << s.attach_type;
}

// Two tasks moving themselves between CPUs hundreds of times: the probe's counts for their
// cgroup against the sum of their nr_migrations, each move's split by the nodes of the CPUs.
TEST_P(PlacementSplitTest, MigrationsMatchTheKernelsNrMigrationsByNode) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const CpuNodes nodes = Nodes();
  const std::vector<int> cpus = testing::BounceCpus(nodes);
  ASSERT_GE(cpus.size(), 2u) << "needs two CPUs to move a task between";
  TestCgroup cgroup("stagewatch/placement-migrate");
  auto probe = PlacementProbe::Start(
      {.key = cgroup.layout().key, .features = testing::ProbeFeaturesForTests(),
       .cpu_nodes = nodes});
  ASSERT_TRUE(probe.ok()) << probe.status();

  constexpr int kMoves = 300;
  Bouncers bouncers(cgroup, cpus, nodes, 2, kMoves, std::chrono::microseconds(200));
  bouncers.AwaitReady();
  const PlacementCgroupCounts before = CountsOf(**probe, cgroup.id());
  bouncers.Release();
  const KernelPlacement kernel = bouncers.Collect();
  const PlacementCgroupCounts after = CountsOf(**probe, cgroup.id());
  bouncers.Finish();

  const double node = after.node_migrations - before.node_migrations;
  const double cross = after.cross_node_migrations - before.cross_node_migrations;
  std::printf("%zu nodes, CPUs", nodes.nodes.size());
  for (int cpu : cpus) std::printf(" %d (node %u)", cpu, nodes.nodes[nodes.ColumnOf(cpu)]);
  std::printf("\nwithin a node: bpf %.0f nr_migrations %lu; across: bpf %.0f nr_migrations %lu\n",
              node, kernel.node_migrations, cross, kernel.cross_node_migrations);
  // Every move is a migration (the task is pinned to one CPU at a time).
  ASSERT_GE(kernel.node_migrations + kernel.cross_node_migrations, 2u * kMoves);
  EXPECT_NEAR(node, kernel.node_migrations, 0.02 * kernel.node_migrations);
  EXPECT_NEAR(cross, kernel.cross_node_migrations, 0.02 * kernel.cross_node_migrations);
  if (nodes.nodes.size() == 1) {
    EXPECT_EQ(cross, 0);
  } else {
    EXPECT_GT(kernel.cross_node_migrations, 0u) << "two nodes, and no move across them";
  }
}

// The same tasks' CPU time, as the sched tracker folds it by the node of each CPU, against
// their schedstat time split by the node they were pinned to.
TEST_P(PlacementSplitTest, OnCpuTimeByNodeMatchesSchedstat) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const CpuNodes nodes = Nodes();
  const std::vector<int> cpus = testing::BounceCpus(nodes);
  ASSERT_GE(cpus.size(), 2u) << "needs two CPUs to move a task between";
  TestCgroup cgroup("stagewatch/placement-oncpu");
  auto probe = SchedProbe::Start(
      {.key = cgroup.layout().key, .features = testing::ProbeFeaturesForTests()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  CgroupPathCache paths(cgroup.layout().key_root);
  DiscoveryConfig discovery;
  discovery.max_stages = 4096;  // the host's own stages must not push this one out
  StageResolver stages({}, discovery);
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SchedTracker tracker(probe->get(), &namer);
  ASSERT_TRUE(tracker.SplitOncpuByCpuGroup(nodes.column_of_cpu).ok());

  Bouncers bouncers(cgroup, cpus, nodes, 2, 100, std::chrono::microseconds(3000));
  bouncers.AwaitReady();
  namer.Refresh();  // the sampler's, in the agent: a collection only reads the names
  const StageId stage = stages.Resolve(cgroup.path()).id;
  auto by_node = [&] {
    tracker.Collect();
    std::vector<uint64_t> ns = tracker.Totals()[stage].oncpu_ns_by_cpu_group;
    ns.resize(nodes.nodes.size());
    return ns;
  };
  const std::vector<uint64_t> before = by_node();
  bouncers.Release();
  const KernelPlacement kernel = bouncers.Collect();
  const std::vector<uint64_t> after = by_node();
  bouncers.Finish();

  for (size_t column = 0; column < nodes.nodes.size(); column++) {
    const uint32_t node = nodes.nodes[column];
    const double bpf = after[column] - before[column];
    const double truth = kernel.oncpu_ns_by_node.contains(node) ? kernel.oncpu_ns_by_node.at(node)
                                                                : 0;
    const double moving = kernel.moving_ns;  // on either node: it widens both bounds
    std::printf("node %u: bpf %.3f ms kernel %.3f ms (+ up to %.3f ms moving)\n", node,
                bpf / 1e6, truth / 1e6, moving / 1e6);
    EXPECT_NEAR(bpf, truth + moving / 2, 0.05 * truth + moving / 2) << "node " << node;
  }
  // With more than one node the time is on two of them.
  EXPECT_EQ(kernel.oncpu_ns_by_node.size(), std::min<size_t>(nodes.nodes.size(), 2));
}

// The tracker folds a cgroup only when its counts moved (or names changed): a cgroup whose
// tasks stopped moving is read, not folded again; once it is gone, its stage keeps its counts.
TEST(PlacementTrackerTest, StillCgroupsAreNotFoldedAgainAndGoneOnesKeepTheirCounts) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const CpuNodes nodes = HostNodes();
  const std::vector<int> cpus = testing::BounceCpus(nodes);
  ASSERT_GE(cpus.size(), 2u) << "needs two CPUs to move a task between";
  auto cgroup = std::make_unique<TestCgroup>("stagewatch/placement-fold");
  auto probe = PlacementProbe::Start({.key = cgroup->layout().key,
                                      .features = testing::ProbeFeaturesForTests(),
                                      .cpu_nodes = nodes});
  ASSERT_TRUE(probe.ok()) << probe.status();
  CgroupPathCache paths(cgroup->layout().key_root);
  DiscoveryConfig discovery;
  discovery.max_stages = 4096;  // the host's own stages must not push this one out
  StageResolver stages({}, discovery);
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  PlacementTracker tracker(probe->get(), &namer);
  const std::string path = cgroup->path();
  const uint64_t id = cgroup->id();
  {
    Bouncers bouncers(*cgroup, cpus, nodes, 1, 50, std::chrono::microseconds(100));
    bouncers.AwaitReady();
    bouncers.Release();
    bouncers.Collect();
  }  // exited
  namer.Refresh();
  const StageId stage = stages.Resolve(path).id;
  auto total = [&] {
    const PlacementStageTotals t = tracker.Totals()[stage];
    return t.node_migrations + t.cross_node_migrations;
  };
  tracker.Collect();
  const uint64_t counted = total();
  EXPECT_GE(counted, 50u);
  tracker.Collect();
  EXPECT_EQ(total(), counted);
  const PlacementTracker::Folded still = tracker.last_folded();
  std::printf("still: %zu cgroups read, %zu folded\n", still.read, still.folded);
  EXPECT_GE(still.read, 1u);
  EXPECT_LT(still.folded, still.read) << "the cgroup that stopped moving was folded again";

  cgroup.reset();  // removed
  namer.Refresh();
  tracker.Collect();  // folds its last counts and deletes its entry
  tracker.Collect();  // finds it gone: retired
  EXPECT_EQ(total(), counted);
  for (const PlacementCgroupCounts& c : (*probe)->Read()) {
    EXPECT_NE(c.cgroup_id, id) << "the removed cgroup's entry is still in the map";
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, PlacementSplitTest,
                         ::testing::Values(Topology::kHost, Topology::kEveryCpuANode),
                         [](const auto& info) {
                           return info.param == Topology::kHost ? "HostNodes" : "EveryCpuANode";
                         });

}  // namespace
}  // namespace stagewatch
