// The accuracy table's placement rows: a stage's CPU migrations and its CPU time by NUMA node
// on /metrics against what the kernel counted of its tasks (se.nr_migrations in
// /proc/<pid>/sched, split by the nodes of the CPUs each move joined; schedstat's CPU time,
// split by the node each task was pinned to).
//
// On this one-node host every move stays on node 0 (cross_node must stay 0); moves across
// nodes, and CPU time on a second node, are made only on a two-node machine (the VM stage).
// So is a stage's memory on a node other than its CPUs' (the remote share's remote case).
#include <bpf/libbpf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cgroup/numa_stat.h"

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
    const double moving = kernel.moving_ns * 1e-9;  // on either node: it widens both bounds
    std::printf("node %u: /metrics %.4f s kernel %.4f s (+ up to %.4f s moving)\n", node,
                seconds, truth, moving);
    EXPECT_NEAR(seconds, truth + moving / 2, 0.05 * truth + moving / 2) << seconds_series(node);
  }
}

// A task pinned to a CPU of `cpu_node` with its memory bound to `memory_node` (set_mempolicy,
// as numactl --membind does): it touches kTouched of anonymous memory, runs ~0.3 s on its CPU,
// says so, and waits to be killed.
constexpr size_t kTouched = 48 << 20;
pid_t SpawnPlaced(TestCgroup& cgroup, int cpu, int memory_node, int ready_fd) {
  return cgroup.Spawn("sw-placed", [=] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    unsigned long nodes = 1UL << memory_node;
    constexpr int kMpolBind = 2;
    if (sched_setaffinity(0, sizeof(one), &one) != 0 ||
        syscall(SYS_set_mempolicy, kMpolBind, &nodes, sizeof(nodes) * 8) != 0) {
      std::perror("sw-placed");
      _exit(1);
    }
    char* memory = static_cast<char*>(
        mmap(nullptr, kTouched, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (memory == MAP_FAILED) _exit(1);
    std::memset(memory, 1, kTouched);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
    }
    (void)!write(ready_fd, "r", 1);
    pause();
  });
}

// A stage's remote share on /metrics against its memory.numa_stat: its CPU time all ran on
// one node, so the share is the part of its memory on the others. Local memory: at most 0.1;
// memory bound to another node (only where the host has two): at least 0.9.
TEST(AccuracyE2E, RemoteShareIsTheMemoryOffTheNodeItsCpuTimeRanOn) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  const int cpu_node = host->node_cpus.begin()->first;
  const int cpu = host->node_cpus.begin()->second.front();
  std::vector<int> memory_nodes = {cpu_node};  // local
  for (int node : host->memory_nodes) {
    if (node != cpu_node) {
      memory_nodes.push_back(node);  // remote
      break;
    }
  }
  if (memory_nodes.size() == 1) {
    std::printf("one NUMA node with memory: the remote case runs on a two-node machine (the VM "
                "stage)\n");
  }
  for (int memory_node : memory_nodes) {
    SCOPED_TRACE("CPU " + std::to_string(cpu) + " on node " + std::to_string(cpu_node) +
                 ", memory on node " + std::to_string(memory_node));
    const std::string stage = StageName("remote-" + std::to_string(memory_node));
    TestCgroup stage_cgroup(stage);
    TestCgroup run(stage_cgroup, "run");  // on cgroup v2 processes live in leaves
    Agent agent(StageConfig(stage));
    ASSERT_TRUE(agent.Ready()) << agent.log();
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = SpawnPlaced(run, cpu, memory_node, ready[1]);
    char b = 0;
    const bool placed = read(ready[0], &b, 1) == 1;
    close(ready[0]);
    close(ready[1]);
    ASSERT_TRUE(placed) << "the placed task did not start";

    const std::string series = Series("stagewatch_memory_remote_ratio", stage);
    // The share weighs the memory by the CPU time counted at the last collection: wait for one
    // that holds nearly all the task's (a collection during its run saw mostly its start).
    const double cpu_seconds =
        std::stod(testing::ReadFile("/proc/" + std::to_string(pid) + "/schedstat")) * 1e-9;
    auto counted_cpu = [&](const testing::Scrape& s) {
      double sum = 0;
      for (const auto& [node, cpus] : host->node_cpus) {
        sum += std::max(0.0, ValueOr(s, Series("stagewatch_cpu_node_seconds_total", stage,
                                                "numa_node=\"" + std::to_string(node) + "\""),
                                     0));
      }
      return sum;
    };
    testing::Scrape m;
    ASSERT_TRUE(testing::WaitUntil([&] {
      m = agent.Scrape();
      return ValueOr(m, series, -1) >= 0 &&
             ValueOr(m, Series("stagewatch_memory_numa_bytes", stage,
                               "numa_node=\"" + std::to_string(memory_node) + "\",type=\"anon\""),
                     0) >= 0.9 * kTouched &&
             counted_cpu(m) >= 0.95 * cpu_seconds;
    }, 10000)) << "CPU time counted " << counted_cpu(m) << " s of " << cpu_seconds << " s\n"
               << agent.log();
    absl::StatusOr<NumaMemory> numa = ReadNumaStat(stage_cgroup.layout(), stage_cgroup.path());
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ASSERT_TRUE(numa.ok()) << numa.status();
    double total = 0, local = 0;
    for (const auto& [node, bytes] : *numa) {
      total += bytes.anon_bytes + bytes.file_bytes;
      if (node == cpu_node) local += bytes.anon_bytes + bytes.file_bytes;
    }
    const double truth = 1 - local / total;
    std::printf("memory on node %d: remote share /metrics %.3f, memory.numa_stat %.3f\n",
                memory_node, ValueOr(m, series, -1), truth);
    EXPECT_NEAR(ValueOr(m, series, -1), truth, 0.05);
    if (memory_node == cpu_node) {
      EXPECT_LE(ValueOr(m, series, -1), 0.1);
    } else {
      EXPECT_GE(ValueOr(m, series, -1), 0.9);
    }
  }
}

}  // namespace
}  // namespace stagewatch::accuracy
