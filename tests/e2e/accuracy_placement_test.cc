// The accuracy table's placement rows: a stage's CPU migrations and its CPU time by NUMA node
// on /metrics against what the kernel counted of its tasks (se.nr_migrations in
// /proc/<pid>/sched, split by the nodes of the CPUs each move joined; schedstat's CPU time,
// split by the node each task was pinned to).
//
// On this one-node host every move stays on node 0 (cross_node must stay 0); moves across
// nodes, and CPU time on a second node, are made only on a two-node machine (the VM stage).
#include <bpf/libbpf.h>

#include <chrono>
#include <cstdio>

#include "accuracy_support.h"
#include "migration_workload.h"

namespace stagewatch::accuracy {
namespace {

using testing::TestCgroup;
using testing::ValueOr;

TEST(AccuracyE2E, MigrationsAndCpuTimeByNodeMatchTheKernel) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(libbpf_num_possible_cpus());
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const std::vector<int> cpus = testing::BounceCpus(*nodes);
  ASSERT_GE(cpus.size(), 2u) << "needs two CPUs to move a task between";
  const std::string stage = StageName("placement");
  TestCgroup cgroup(stage);
  Agent agent(StageConfig(stage));
  ASSERT_TRUE(agent.Ready()) << agent.log();

  const std::string node_series =
      Series("stagewatch_cpu_migrations_total", stage, "scope=\"node\"");
  const std::string cross_series =
      Series("stagewatch_cpu_migrations_total", stage, "scope=\"cross_node\"");
  auto seconds_series = [&](uint32_t node) {
    return Series("stagewatch_cpu_node_seconds_total", stage,
                  "numa_node=\"" + std::to_string(node) + "\"");
  };
  testing::Bouncers bouncers(cgroup, cpus, *nodes, 2, 300, std::chrono::microseconds(1000));
  // The stage is new: the agent counts it from zero. Before the kernel's counts begin, each
  // task has only joined the cgroup and pinned itself (at most one migration, a ms of CPU).
  bouncers.AwaitReady();
  bouncers.Release();
  const testing::KernelPlacement kernel = bouncers.Collect();
  bouncers.Finish();

  auto counted = [](const testing::Scrape& m, const std::string& series) {
    return ValueOr(m, series, -1);
  };
  auto truth_seconds = [&](uint32_t node) {
    return kernel.oncpu_ns_by_node.contains(node) ? kernel.oncpu_ns_by_node.at(node) * 1e-9 : 0;
  };
  // They reach /metrics at a collection once the cgroup is named; wait until every series has
  // at least nearly its truth, then check that none is beyond it.
  testing::Scrape m;
  const double moves = kernel.node_migrations + kernel.cross_node_migrations;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        bool caught_up = counted(m, node_series) + counted(m, cross_series) >= 0.98 * moves;
        for (uint32_t node : nodes->nodes) {
          caught_up = caught_up && counted(m, seconds_series(node)) >= 0.95 * truth_seconds(node);
        }
        return caught_up;
      },
      10000))
      << "migrations " << counted(m, node_series) << " + " << counted(m, cross_series) << " of "
      << moves << "\n" << agent.log();

  std::printf("within a node: /metrics %.0f nr_migrations %lu; across: /metrics %.0f "
              "nr_migrations %lu\n",
              counted(m, node_series), kernel.node_migrations, counted(m, cross_series),
              kernel.cross_node_migrations);
  EXPECT_NEAR(counted(m, node_series), kernel.node_migrations, 0.02 * kernel.node_migrations);
  EXPECT_NEAR(counted(m, cross_series), kernel.cross_node_migrations,
              0.02 * kernel.cross_node_migrations);
  for (uint32_t node : nodes->nodes) {
    const double truth = truth_seconds(node);
    const double seconds = counted(m, seconds_series(node));
    std::printf("node %u: /metrics %.4f s schedstat %.4f s\n", node, seconds, truth);
    EXPECT_NEAR(seconds, truth, 0.05 * truth) << seconds_series(node);
  }
}

}  // namespace
}  // namespace stagewatch::accuracy
