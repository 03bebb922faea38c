// A launched run records where it ran: its CPU migrations and CPU time by NUMA node against
// what the kernel counted of its one task (/proc/thread-self/sched se.nr_migrations and
// schedstat), and its memory by node against its cgroup's memory.numa_stat while it held it.
// The run's command is this test binary, running the disabled workload below: it moves itself
// between CPUs (within a node here; across nodes too on a two-node machine) and writes what
// the kernel counted of it to the file STAGEWATCH_PLACEMENT_REPORT names.
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cgroup/layout.h"
#include "cgroup/numa_stat.h"
#include "cgroup/proc_cgroup.h"
#include "gtest/gtest.h"
#include "migration_workload.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/run_placement_json.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using nlohmann::json;
using testing::AgentProcess;
using testing::TestCgroup;

constexpr char kReportVariable[] = "STAGEWATCH_PLACEMENT_REPORT";
constexpr size_t kHeldBytes = 48 << 20;

std::string SelfExe() {
  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

// The run's command: holds 48 MiB touched on its first CPU's node, bounces, reads its cgroup's
// memory.numa_stat while it holds them (past the launcher's sampling interval), and reports.
TEST(RunPlacementWorkload, DISABLED_BounceHoldAndReport) {
  const char* report_path = getenv(kReportVariable);
  ASSERT_NE(report_path, nullptr) << "run by RunPlacementE2E only";
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(libbpf_num_possible_cpus());
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const std::vector<int> cpus = testing::BounceCpus(*nodes);
  ASSERT_GE(cpus.size(), 2u);
  testing::PinTo(cpus[0]);
  char* held = static_cast<char*>(malloc(kHeldBytes));
  ASSERT_NE(held, nullptr);
  memset(held, 1, kHeldBytes);
  const testing::KernelPlacement bounced =
      testing::Bounce(cpus, *nodes, 0, 300, std::chrono::microseconds(1000), [] {});
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  ASSERT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<std::string> cgroup = ReadProcCgroup(getpid(), layout->key);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the launcher samples it
  absl::StatusOr<NumaMemory> memory = ReadNumaStat(*layout, *cgroup);
  ASSERT_TRUE(memory.ok()) << memory.status();
  json oncpu = json::object();
  for (const auto& [node, ns] : bounced.oncpu_ns_by_node) oncpu[std::to_string(node)] = ns;
  const json report = {{"bounce_node_migrations", bounced.node_migrations},
                       {"bounce_cross_node_migrations", bounced.cross_node_migrations},
                       {"bounce_oncpu_ns_by_node", oncpu},
                       {"memory_by_node", MemoryByNodeJson(*memory)},
                       // Its whole life, last: it stays pinned from here to its exit.
                       {"nr_migrations", testing::NrMigrations()},
                       {"oncpu_ns", testing::OncpuNs()}};
  std::ofstream(report_path) << report.dump();
  held[kHeldBytes - 1] = 2;  // held until here
  free(held);
}

TEST(RunPlacementE2E, ALaunchedRunRecordsItsMigrationsCpuTimeAndMemoryByNode) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  char tmpl[] = "/tmp/stagewatch-placement-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string ledger_path = dir + "/ledger.db", report_path = dir + "/report.json";
  TestCgroup parent("run-placement-e2e", {"cpu", "cpuacct", "pressure"});
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path",
                      ledger_path});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  setenv(kReportVariable, report_path.c_str(), 1);
  AgentProcess launcher({"run", "--stage", "swplacement", "--run-id", "placed-1",
                         "--ledger.path", ledger_path, "--cgroup.parent", parent.path(), "--",
                         SelfExe(), "--gtest_also_run_disabled_tests",
                         "--gtest_filter=RunPlacementWorkload.DISABLED_BounceHoldAndReport"});
  unsetenv(kReportVariable);
  ASSERT_EQ(launcher.WaitExit(60000), 0) << launcher.log();
  const json kernel = json::parse(testing::ReadFile(report_path), nullptr, false);
  ASSERT_TRUE(kernel.is_object()) << launcher.log();

  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  absl::StatusOr<std::optional<RunRecord>> found = (*ledger)->Get("placed-1");
  ASSERT_TRUE(found.ok() && *found);
  const RunRecord& run = **found;
  ASSERT_TRUE(run.agent.saw_end) << agent.log();

  // Migrations: its whole life's, but for the few before it joined the run's cgroup.
  ASSERT_TRUE(run.agent.node_migrations && run.agent.cross_node_migrations) << agent.log();
  const double recorded = double(*run.agent.node_migrations + *run.agent.cross_node_migrations);
  const double truth = kernel["nr_migrations"].get<double>();
  std::printf("migrations: ledger %.0f (%lu across nodes), kernel %.0f (bounce: %lu across)\n",
              recorded, *run.agent.cross_node_migrations, truth,
              kernel["bounce_cross_node_migrations"].get<uint64_t>());
  EXPECT_LE(recorded, truth * 1.02);
  EXPECT_GE(recorded, truth * 0.98 - 3);
  EXPECT_GE(double(*run.agent.cross_node_migrations),
            0.98 * kernel["bounce_cross_node_migrations"].get<double>());

  // CPU time by node: all of it, and on each node at least what its bounce spent there.
  ASSERT_FALSE(run.agent.cpu_seconds_by_node.empty()) << agent.log();
  double recorded_seconds = 0;
  for (const auto& [node, seconds] : run.agent.cpu_seconds_by_node) recorded_seconds += seconds;
  const double truth_seconds = kernel["oncpu_ns"].get<double>() / 1e9;
  std::printf("CPU time: ledger %.3f s, kernel %.3f s\n", recorded_seconds, truth_seconds);
  EXPECT_NEAR(recorded_seconds, truth_seconds, 0.05 * truth_seconds + 0.02);
  for (const auto& [node, ns] : kernel["bounce_oncpu_ns_by_node"].items()) {
    const int n = std::stoi(node);
    const double on_node =
        run.agent.cpu_seconds_by_node.contains(n) ? run.agent.cpu_seconds_by_node.at(n) : 0;
    std::printf("  node %d: ledger %.3f s, bounce %.3f s\n", n, on_node,
                ns.get<double>() / 1e9);
    EXPECT_GE(on_node, 0.95 * ns.get<double>() / 1e9) << "node " << n;
  }

  // Memory by node: its peak, as its cgroup's memory.numa_stat held it with 48 MiB touched.
  ASSERT_TRUE(run.end);
  const NumaMemory& recorded_memory = run.end->facts.memory_by_node;
  const NumaMemory held = MemoryByNodeFrom(kernel["memory_by_node"]);
  ASSERT_FALSE(recorded_memory.empty());
  EXPECT_GE(NumaMemoryBytes(held), kHeldBytes);
  for (const auto& [node, m] : held) {
    const NumaNodeMemory r = recorded_memory.contains(node) ? recorded_memory.at(node)
                                                            : NumaNodeMemory{};
    std::printf("memory node %d: ledger anon %lu file %lu, numa_stat anon %lu file %lu\n", node,
                r.anon_bytes, r.file_bytes, m.anon_bytes, m.file_bytes);
    EXPECT_NEAR(double(r.anon_bytes + r.file_bytes), double(m.anon_bytes + m.file_bytes),
                0.1 * double(kHeldBytes)) << "node " << node;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace stagewatch
