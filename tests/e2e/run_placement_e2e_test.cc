// A launched run records where it ran: its CPU migrations and CPU time by NUMA node against
// what the kernel counted of its one task (/proc/thread-self/sched se.nr_migrations and
// schedstat), and its memory by node against its cgroup's memory.numa_stat while it held it.
// A run pinned to one node's CPUs with its memory on another is degraded by remote memory, and
// `advise` says to pin its memory where its CPU time ran.
// The runs' commands are this test binary, running the disabled workloads below: they write
// what the kernel counted of them to the file STAGEWATCH_PLACEMENT_REPORT names.
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

#include "cgroup/cpu_list.h"
#include "cgroup/layout.h"
#include "cgroup/numa_stat.h"
#include "cgroup/numa_topology.h"
#include "cgroup/proc_cgroup.h"
#include "gtest/gtest.h"
#include "migration_workload.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/run_placement.h"
#include "runs/run_placement_json.h"
#include "runs/verdict.h"
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

// This process's cgroup's memory.numa_stat.
NumaMemory OwnNumaStat() {
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  EXPECT_TRUE(layout.ok()) << layout.status();
  if (!layout.ok()) return {};
  absl::StatusOr<std::string> cgroup = ReadProcCgroup(getpid(), layout->key);
  EXPECT_TRUE(cgroup.ok()) << cgroup.status();
  if (!cgroup.ok()) return {};
  absl::StatusOr<NumaMemory> memory = ReadNumaStat(*layout, *cgroup);
  EXPECT_TRUE(memory.ok()) << memory.status();
  return memory.ok() ? *memory : NumaMemory{};
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
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the launcher samples it
  const NumaMemory memory = OwnNumaStat();
  ASSERT_FALSE(memory.empty());
  json oncpu = json::object();
  for (const auto& [node, ns] : bounced.oncpu_ns_by_node) oncpu[std::to_string(node)] = ns;
  const json report = {{"bounce_node_migrations", bounced.node_migrations},
                       {"bounce_cross_node_migrations", bounced.cross_node_migrations},
                       {"bounce_oncpu_ns_by_node", oncpu},
                       {"memory_by_node", MemoryByNodeJson(memory)},
                       // Its whole life, last: it stays pinned from here to its exit.
                       {"nr_migrations", testing::NrMigrations()},
                       {"oncpu_ns", testing::OncpuNs()}};
  std::ofstream(report_path) << report.dump();
  held[kHeldBytes - 1] = 2;  // held until here
  free(held);
}

// The pinned run's command: holds 48 MiB where its cpuset puts them, busy on its CPU for 1.5 s
// meanwhile (the agent charges CPU time to nodes, the launcher samples memory), and reports its
// cgroup's memory.numa_stat.
TEST(RunPlacementWorkload, DISABLED_HoldAndSpin) {
  const char* report_path = getenv(kReportVariable);
  ASSERT_NE(report_path, nullptr) << "run by RunPlacementE2E only";
  char* held = static_cast<char*>(malloc(kHeldBytes));
  ASSERT_NE(held, nullptr);
  memset(held, 1, kHeldBytes);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  volatile uint64_t spins = 0;
  while (std::chrono::steady_clock::now() < until) spins = spins + 1;
  const NumaMemory memory = OwnNumaStat();
  ASSERT_FALSE(memory.empty());
  std::ofstream(report_path) << json{{"memory_by_node", MemoryByNodeJson(memory)}}.dump();
  held[kHeldBytes - 1] = 2;  // held until here
  free(held);
}

// `stagewatch run --stage <stage> --run-id <id> <flags> -- <this binary's workload>`, with its
// report written to `report_path`.
std::unique_ptr<AgentProcess> LaunchWorkload(const std::string& stage, const std::string& id,
                            const std::string& ledger_path, const TestCgroup& parent,
                            const std::string& report_path, const std::string& workload,
                            const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args = {"run", "--stage", stage, "--run-id", id, "--ledger.path",
                                   ledger_path, "--cgroup.parent", parent.path()};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", SelfExe(), "--gtest_also_run_disabled_tests",
                           "--gtest_filter=RunPlacementWorkload.DISABLED_" + workload});
  setenv(kReportVariable, report_path.c_str(), 1);
  auto launcher = std::make_unique<AgentProcess>(args);
  unsetenv(kReportVariable);
  return launcher;
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
  std::unique_ptr<AgentProcess> launcher = LaunchWorkload(
      "swplacement", "placed-1", ledger_path, parent, report_path, "BounceHoldAndReport");
  ASSERT_EQ(launcher->WaitExit(60000), 0) << launcher->log();
  const json kernel = json::parse(testing::ReadFile(report_path), nullptr, false);
  ASSERT_TRUE(kernel.is_object()) << launcher->log();

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

// A hand-made run whose tasks ran in a child cgroup made and removed before the run's own:
// the child's migrations and CPU time are the run's, though the agent forgot the child's
// entries seconds before the run ended. Against what the kernel counted of its one task.
TEST(RunPlacementE2E, AChildCgroupRemovedBeforeItsRunEndsStillCountsInTheRun) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(libbpf_num_possible_cpus());
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  const std::vector<int> cpus = testing::BounceCpus(*nodes);
  ASSERT_GE(cpus.size(), 2u) << "needs two CPUs to move a task between";
  char tmpl[] = "/tmp/stagewatch-placement-child-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string ledger_path = dir + "/ledger.db";
  const std::string stage = "swchild-" + std::to_string(getpid());
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path",
                      ledger_path});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  testing::KernelPlacement kernel;
  {
    TestCgroup top("stagewatch/" + stage);
    TestCgroup run(top, "run-1");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the agent sees the run first
    {
      TestCgroup step(run, "step");
      testing::Bouncers bouncer(step, cpus, *nodes, 1, 300, std::chrono::microseconds(1000));
      bouncer.AwaitReady();
      bouncer.Release();
      kernel = bouncer.Collect();
      bouncer.Finish();
    }
    // The placement and sched trackers forget a removed cgroup at their next collections
    // (every 2.5 s): the run outlives its child by more than two.
    std::this_thread::sleep_for(std::chrono::seconds(6));
  }
  std::optional<RunRecord> ended;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path);
        if (!ledger.ok()) return false;
        absl::StatusOr<std::vector<RunRecord>> runs = (*ledger)->List({.stage = stage});
        if (runs.ok() && runs->size() == 1 && (*runs)[0].end) ended = (*runs)[0];
        return ended.has_value();
      },
      10000))
      << agent.log();
  ASSERT_TRUE(ended->agent.node_migrations && ended->agent.cross_node_migrations) << agent.log();
  const double recorded =
      double(*ended->agent.node_migrations + *ended->agent.cross_node_migrations);
  const double truth = double(kernel.node_migrations + kernel.cross_node_migrations);
  double seconds = 0, truth_seconds = kernel.moving_ns / 1e9;
  for (const auto& [node, s] : ended->agent.cpu_seconds_by_node) seconds += s;
  for (const auto& [node, ns] : kernel.oncpu_ns_by_node) truth_seconds += ns / 1e9;
  std::printf("the child's migrations: run %.0f, kernel %.0f; CPU time: run %.3f s, kernel "
              "%.3f s\n", recorded, truth, seconds, truth_seconds);
  // Before the kernel's counts began, the task only joined the child and pinned itself.
  EXPECT_GE(recorded, truth);
  EXPECT_LE(recorded, truth + 3);
  EXPECT_GE(seconds, 0.95 * truth_seconds);
  EXPECT_LE(seconds, truth_seconds + 0.05);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Pinned to the first node's CPUs with its memory there, then (where the host has a second
// node with memory: the VM stage) on that other node. Remote: degraded by remote memory, its
// share as its memory.numa_stat held it, and `advise` says to pin its memory with its CPUs.
// Local: neither.
TEST(RunPlacementE2E, ARunWithItsMemoryOnAnotherNodeIsDegradedForItAndAdvisedToPin) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  const int cpu_node = host->node_cpus.begin()->first;
  const std::string cpus = FormatCpuList(host->node_cpus.begin()->second);
  std::vector<int> memory_nodes = {cpu_node};
  for (int node : host->memory_nodes) {
    if (node != cpu_node) {
      memory_nodes.push_back(node);
      break;
    }
  }
  if (memory_nodes.size() == 1) {
    std::printf("one NUMA node with memory: the remote run is made on a two-node machine (the VM "
                "stage)\n");
  }
  char tmpl[] = "/tmp/stagewatch-pinning-e2e-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string ledger_path = dir + "/ledger.db", report_path = dir + "/report.json";
  TestCgroup parent("run-pinning-e2e", {"cpu", "cpuacct", "cpuset", "pressure"});
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path",
                      ledger_path});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  for (int memory_node : memory_nodes) {
    const bool remote = memory_node != cpu_node;
    const std::string mems = std::to_string(memory_node);
    SCOPED_TRACE("--cpuset-cpus " + cpus + " --cpuset-mems " + mems);
    // A stage each: advise sums a stage's runs.
    const std::string stage = remote ? "swpinned-remote" : "swpinned-local";
    const std::string id = stage + "-1";
    std::unique_ptr<AgentProcess> launcher =
        LaunchWorkload(stage, id, ledger_path, parent, report_path, "HoldAndSpin",
                       {"--cpuset-cpus", cpus, "--cpuset-mems", mems});
    ASSERT_EQ(launcher->WaitExit(60000), 0) << launcher->log();
    const json kernel = json::parse(testing::ReadFile(report_path), nullptr, false);
    ASSERT_TRUE(kernel.is_object()) << launcher->log();
    const NumaMemory held = MemoryByNodeFrom(kernel["memory_by_node"]);
    ASSERT_GE(NumaMemoryBytes(held), kHeldBytes);
    // All its CPU time ran on cpu_node: the truth is the part of its memory elsewhere.
    const double local = held.contains(cpu_node) ? double(held.at(cpu_node).anon_bytes +
                                                          held.at(cpu_node).file_bytes)
                                                 : 0;
    const double truth = 1 - local / double(NumaMemoryBytes(held));

    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    absl::StatusOr<std::optional<RunRecord>> found = (*ledger)->Get(id);
    ASSERT_TRUE(found.ok() && *found);
    const RunRecord& run = **found;
    ASSERT_TRUE(run.agent.saw_end) << agent.log();
    const std::optional<double> share = RunRemoteMemoryShare(run);
    ASSERT_TRUE(share) << "CPU by node: " << CpuByNodeText(run.agent.cpu_seconds_by_node)
                       << "\n" << agent.log();
    std::printf("memory on node %d: the run's remote share %.3f, memory.numa_stat %.3f\n",
                memory_node, *share, truth);
    EXPECT_NEAR(*share, truth, 0.05);
    EXPECT_GE(*share, remote ? 0.9 : 0.0);
    EXPECT_LE(*share, remote ? 1.0 : 0.1);

    const Verdict verdict = JudgeRun(run, RunsConfig{});
    const bool named = std::any_of(verdict.reasons.begin(), verdict.reasons.end(),
                                   [](const VerdictReason& r) { return r.cause == "remote_memory"; });
    EXPECT_EQ(named, remote) << verdict.Summary();
    AgentProcess show({"runs", "show", "--ledger.path", ledger_path, id});
    ASSERT_EQ(show.WaitExit(20000), 0) << show.log();
    EXPECT_EQ(show.log().find("remote memory: ") != std::string::npos, remote) << show.log();

    AgentProcess advise({"advise", "--stage", stage, "--ledger.path", ledger_path});
    ASSERT_EQ(advise.WaitExit(20000), 0) << advise.log();
    std::printf("%s", advise.log().c_str());
    const std::string pin = "pin with `--cpuset-cpus " + cpus + " --cpuset-mems " +
                            std::to_string(cpu_node) + "`";
    EXPECT_EQ(advise.log().find(remote ? pin : "pin with") != std::string::npos, remote);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace stagewatch
