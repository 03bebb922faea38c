// `stagewatch run` for real: the built binary launches commands in real cgroups beneath this
// test's own (via --cgroup.parent), with real limits, a real OOM kill and a real SQLite
// ledger; figures are checked against the kernel's cgroup files read while the run lived.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/runs_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "probes/features.h"
#include "runs/verdict.h"
#include "privileged/launcher_fixture.h"
#include "test_support.h"

namespace stagewatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Reading in Python is the simplest portable allocation that touches every page.
constexpr char kHog[] = "a = b'x' * (400 * 1024 * 1024)";
// One loop: the test's group outweighs the rest of the machine (cpu.shares), so its 0.2-CPU
// quota runs out early in each period even on a loaded one. More loops than CPUs would also
// queue behind each other whenever quota comes: a run-queue wait of the run's own making.
constexpr char kBusy[] = "timeout 2.5 sh -c 'while :; do :; done'";

class LauncherTest : public LauncherFixture {};

uint64_t KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return ~0ull;
}

TEST_F(LauncherTest, ACleanRunExitsZeroAndIsCleanOnceAnAgentAddsItsFacts) {
  AgentProcess run(Args("validate", "clean-1", {}, {"sh", "-c", "echo working; sleep 2; exit 0"}));
  ASSERT_EQ(run.WaitExit(20000), 0) << run.log();
  EXPECT_THAT(run.log(), HasSubstr("run clean-1 of stage validate starts in cgroup " +
                                   cgroup_->path() + "/stagewatch/validate/clean-1"));
  EXPECT_THAT(run.log(), HasSubstr("working"));
  EXPECT_FALSE(std::filesystem::exists(RunDir("validate", "clean-1"))) << "cgroup left behind";
  EXPECT_FALSE(std::filesystem::exists(cgroup_->dir() + "/stagewatch")) << "parents left behind";

  RunRecord r = Recorded("clean-1");
  ASSERT_TRUE(r.end.has_value());
  EXPECT_EQ(r.end->exit_code, 0);
  EXPECT_EQ(r.start.source, RunSource::kLauncher);
  EXPECT_EQ(r.end->facts.oom_kills_kernel, 0u);
  EXPECT_TRUE(r.end->facts.memory_peak_bytes.has_value());
  EXPECT_TRUE(r.end->facts.cpu_seconds.has_value());
  EXPECT_TRUE(r.end->facts.cpu_pressure_seconds.has_value()) << "PSI of the cgroup2 mirror";
  // No agent ran: what only an agent sees is unknown, and the verdict says so.
  Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kUnobserved) << v.Summary();
  EXPECT_THAT(run.log(), HasSubstr("unobserved"));
  // The agent's part, through the API it will call.
  AgentFacts facts;
  facts.oom_kills_userspace = 0;
  facts.reclaim_stall_seconds = 0;
  facts.run_queue_wait_seconds = 0;
  facts.preemptors_observed = facts.anomalies_observed = true;
  ASSERT_TRUE((*Ledger::Open(ledger_))->AddAgentFacts("clean-1", facts).ok());
  v = JudgeRun(Recorded("clean-1"), RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kClean) << v.Summary();
}

TEST_F(LauncherTest, ARunOomKilledAt200MExits137AndIsInterruptedWithTheKernelsFigures) {
  // The hog is killed; the shell lives on a moment, so the cgroup can be read meanwhile.
  const std::string script = std::string("python3 -c \"") + kHog + "\"; s=$?; sleep 1; exit $s";
  AgentProcess run(Args("train", "oom-1", {"--memory-max", "200M"}, {"sh", "-c", script}));
  const std::string dir = RunDir("train", "oom-1");
  const bool v1 = cgroup_->layout().key == CGROUP_KEY_V1_MEMORY;
  const std::string oom_file = dir + (v1 ? "/memory.oom_control" : "/memory.events");
  const std::string oom_text = ReadWhen(oom_file, [](const std::string& t) {
    return KeyedValue(t, "oom_kill") != ~0ull && KeyedValue(t, "oom_kill") >= 1;
  });
  const uint64_t kernel_kills = KeyedValue(oom_text, "oom_kill");
  const std::string peak = ReadFile(dir + (v1 ? "/memory.max_usage_in_bytes" : "/memory.peak"));
  const std::string limit = ReadFile(dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max"));
  ASSERT_EQ(run.WaitExit(30000), 137) << run.log();

  RunRecord r = Recorded("oom-1");
  ASSERT_TRUE(r.end.has_value());
  EXPECT_EQ(kernel_kills, 1u);
  EXPECT_EQ(r.end->facts.oom_kills_kernel, kernel_kills);
  EXPECT_EQ(r.end->facts.memory_limit_bytes, 200ull << 20);
  EXPECT_EQ(std::to_string(*r.end->facts.memory_limit_bytes) + "\n", limit);
  EXPECT_EQ(std::to_string(*r.end->facts.memory_peak_bytes) + "\n", peak);
  EXPECT_EQ(r.start.limits.memory_max_bytes, 200ull << 20);
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kInterrupted);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_EQ(v.reasons[0].cause, "oom_kill");
  EXPECT_THAT(v.Summary(), HasSubstr("1 OOM kill at its 200.0 MiB memory limit"));
}

TEST_F(LauncherTest, ACommandTheOomKillerEndsIsRecordedWithItsSignal) {
  AgentProcess run(Args("train", "oom-2", {"--memory-max", "200M"}, {"python3", "-c", kHog}));
  ASSERT_EQ(run.WaitExit(30000), 137) << run.log();
  RunRecord r = Recorded("oom-2");
  ASSERT_TRUE(r.end.has_value());
  EXPECT_EQ(r.end->signal, SIGKILL);
  EXPECT_FALSE(r.end->signal_requested);
  EXPECT_EQ(r.end->facts.oom_kills_kernel, 1u);
  EXPECT_GE(*r.end->facts.memory_peak_bytes, 190ull << 20);
  EXPECT_LE(*r.end->facts.memory_peak_bytes, 200ull << 20);
  EXPECT_EQ(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kInterrupted);
  EXPECT_THAT(run.log(), HasSubstr("interrupted: killed by the kernel OOM killer"));
}

TEST_F(LauncherTest, ARunHeldNearItsLimitIsDegradedWithItsSampledTimeThere) {
  const std::string hold = "import time\na = b'x' * (185 * 1024 * 1024)\ntime.sleep(3.5)\n";
  AgentProcess run(Args("train", "near-1", {"--memory-max", "200M"}, {"python3", "-c", hold}));
  ASSERT_EQ(run.WaitExit(30000), 0) << run.log();
  RunRecord r = Recorded("near-1");
  ASSERT_TRUE(r.end && r.end->facts.near_limit_seconds && r.end->facts.memory_p95_bytes);
  EXPECT_GE(*r.end->facts.near_limit_seconds, 1.5);
  EXPECT_GE(*r.end->facts.memory_p95_bytes, 180ull << 20) << "90% of the 200 MiB limit";
  EXPECT_LE(*r.end->facts.memory_p95_bytes, *r.end->facts.memory_peak_bytes);
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kDegraded) << v.Summary();
  bool near = false;
  for (const VerdictReason& reason : v.reasons) near |= reason.cause == "near_memory_limit";
  EXPECT_TRUE(near) << v.Summary();
}

// With an agent watching: the loops' waits for quota are run delay to the kernel, and the
// agent tells them apart, so the verdict names throttling and not the run queue. The test's
// group outweighs the rest of this shared machine tenfold (cpu.shares), so that once quota
// comes the loops get a CPU at once, as on a machine with nothing else running.
TEST_F(LauncherTest, ABusyLoopAtCpuMax02IsDegradedByThrottling) {
  const bool v2 = cgroup_->v2();
  if (!v2) WriteFile(cgroup_->dir("cpu") + "/cpu.shares", "10240");
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger_});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string marker = dir_ + "/loop-done";
  const std::string script = std::string(kBusy) + "; touch " + marker + "; sleep 1.5";
  AgentProcess run(Args("swbusy02", "busy-1", {"--cpu-max", "0.2"}, {"sh", "-c", script}));
  const std::string cpu_dir = RunDir("swbusy02", "busy-1", "cpu");
  // 0.2 CPUs: a 20 ms quota per 100 ms period (v1 cpu.cfs_quota_us, v2 cpu.max).
  const std::string quota_file = cpu_dir + (v2 ? "/cpu.max" : "/cpu.cfs_quota_us");
  const std::string quota = v2 ? "20000 100000\n" : "20000\n";
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(quota_file) == quota; }, 10000)) << run.log();
  // The kernel's figures as the launcher last saw them: cpu.stat read until the launcher
  // removes the cgroup. Throttling goes on past the loops (starting `touch` and `sleep` at 0.2
  // CPUs takes a good part of a second under emulation) and stops during the sleep.
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(marker); }, 20000)) << run.log();
  std::string stat;
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string now = ReadFile(cpu_dir + "/cpu.stat");
        if (now.empty()) return true;
        stat = std::move(now);
        return false;
      },
      30000))
      << run.log();
  ASSERT_FALSE(stat.empty()) << "the run's cgroup went before its cpu.stat could be read";
  ASSERT_EQ(run.WaitExit(30000), 0) << run.log();

  const double throttled_kernel =
      v2 ? double(KeyedValue(stat, "throttled_usec")) / 1e6
         : double(KeyedValue(stat, "throttled_time")) / 1e9;
  RunRecord r = Recorded("busy-1");
  ASSERT_TRUE(r.end && r.end->facts.cpu_throttled_seconds);
  EXPECT_GT(throttled_kernel, 0.1);
  // The kernel adds a throttled period's time when the period ends: the ledger's read and the
  // test's last may be a period apart.
  const double tolerance = 0.05 + 0.01 * throttled_kernel;
  EXPECT_NEAR(*r.end->facts.cpu_throttled_seconds, throttled_kernel, tolerance)
      << "ledger against the kernel's cpu.stat";
  EXPECT_LE(*r.end->facts.cpu_seconds, 0.2 * absl::ToDoubleSeconds(*r.Wall()) + 0.1)
      << "the quota of 0.2 CPUs held";
  // cpu.stat sums the throttled time of each CPU the loop ran on, while the wall time held
  // back is at most one 100 ms period per throttling.
  const double wall = absl::ToDoubleSeconds(*r.Wall());
  const double throttled_wall_kernel =
      std::min(throttled_kernel, double(KeyedValue(stat, "nr_throttled")) * 0.1);
  ASSERT_TRUE(r.end->facts.cpu_throttled_wall_seconds);
  EXPECT_NEAR(*r.end->facts.cpu_throttled_wall_seconds, throttled_wall_kernel, tolerance);
  EXPECT_LE(*r.end->facts.cpu_throttled_wall_seconds, wall);
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kDegraded) << v.Summary();
  bool throttling = false;
  for (const VerdictReason& reason : v.reasons) {
    if (reason.cause == "cpu_throttling") {
      throttling = true;
      EXPECT_LE(*reason.share, 1.0) << reason.text;
      EXPECT_NEAR(*reason.share, throttled_wall_kernel / wall, 0.02 + tolerance / wall);
      EXPECT_THAT(reason.text, HasSubstr("CPU throttled"));
    }
  }
  EXPECT_TRUE(throttling) << v.Summary();

  // The agent's figures: the loop's run delay, most of it spent throttled. Each throttled CPU
  // held the loop waiting, so its throttled waits are about cpu.stat's throttled time.
  ASSERT_TRUE(r.agent.saw_end) << agent.log();
  ASSERT_TRUE(r.agent.run_queue_wait_seconds);
  if (!BtfStructHasMember("/sys/kernel/btf/vmlinux", "cfs_rq", "throttled_clock_self_time")) {
    // Before 6.6 the probe cannot tell throttled waits apart: the verdict subtracts cpu.stat's
    // throttled time, one count per CPU, which leaves in the waits of a second loop on a CPU.
    EXPECT_FALSE(r.agent.run_queue_throttled_seconds);
    return;
  }
  for (const VerdictReason& reason : v.reasons) {
    EXPECT_NE(reason.cause, "run_queue_wait") << v.Summary();
  }
  ASSERT_TRUE(r.agent.run_queue_throttled_seconds);
  const double waited = *r.agent.run_queue_wait_seconds;
  const double throttled = *r.agent.run_queue_throttled_seconds;
  std::printf("run-queue wait %.3f s, of it throttled %.3f s; cpu.stat throttled %.3f s\n",
              waited, throttled, throttled_kernel);
  EXPECT_LE(throttled, waited);
  EXPECT_GE(throttled, 0.9 * throttled_kernel - tolerance);
  EXPECT_GT(throttled, 0.5 * waited) << "most of a throttled loop's run delay is throttling";
}

TEST_F(LauncherTest, ExitCodesAndSignalsComeBackAsShellsReportThem) {
  AgentProcess three(Args("s", "exit-3", {}, {"sh", "-c", "exit 3"}));
  EXPECT_EQ(three.WaitExit(20000), 3) << three.log();
  AgentProcess killed(Args("s", "term-self", {}, {"sh", "-c", "kill -TERM $$"}));
  EXPECT_EQ(killed.WaitExit(20000), 128 + SIGTERM) << killed.log();
  RunRecord r = Recorded("term-self");
  EXPECT_EQ(r.end->signal, SIGTERM);
  EXPECT_FALSE(r.end->signal_requested);
  EXPECT_EQ(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kInterrupted) << "a signal nobody asked for";
  AgentProcess missing(Args("s", "missing", {}, {"/nonexistent/command"}));
  EXPECT_EQ(missing.WaitExit(20000), 127) << missing.log();
  EXPECT_THAT(missing.log(), HasSubstr("No such file or directory"));
}

TEST_F(LauncherTest, SignalsSentToTheLauncherReachTheCommand) {
  const std::string marker = dir_ + "/started";
  AgentProcess trapping(Args("s", "sigint-1", {},
                             {"sh", "-c", "trap 'exit 7' INT; touch " + marker + "; while :; do sleep 0.1; done"}));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(marker); }, 10000)) << trapping.log();
  kill(trapping.pid(), SIGINT);
  EXPECT_EQ(trapping.WaitExit(10000), 7) << "the command's own handler ran: " << trapping.log();

  AgentProcess sleeping(Args("s", "sigterm-1", {}, {"sleep", "60"}));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(RunDir("s", "sigterm-1")); }, 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(sleeping.Stop(), 128 + SIGTERM) << sleeping.log();
  RunRecord r = Recorded("sigterm-1");
  EXPECT_EQ(r.end->signal, SIGTERM);
  EXPECT_TRUE(r.end->signal_requested);
  EXPECT_NE(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kInterrupted) << "it was asked for";
  EXPECT_FALSE(std::filesystem::exists(RunDir("s", "sigterm-1")));

  // A SIGTERM at any moment of the start, even before the command runs, leaves nothing behind.
  for (int delay_ms : {0, 5, 15, 30, 60}) {
    const std::string id = "early-" + std::to_string(delay_ms);
    AgentProcess early(Args("s", id, {"--memory-max", "100M"}, {"sleep", "60"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    EXPECT_EQ(early.Stop(), 128 + SIGTERM) << early.log();
    EXPECT_FALSE(std::filesystem::exists(RunDir("s", id))) << "after " << delay_ms << " ms";
  }
  EXPECT_FALSE(std::filesystem::exists(cgroup_->dir() + "/stagewatch"));
}

// What a researcher and a platform engineer read, from the binary, about real launcher runs.
TEST_F(LauncherTest, RunsShowListAndAdviseReadTheLedger) {
  const std::string alloc = "a = b'x' * (60 * 1024 * 1024)";
  for (int i = 0; i < 3; ++i) {
    AgentProcess run(Args("fit", "fit-" + std::to_string(i), {"--memory-max", "400M"},
                          {"python3", "-c", alloc}));
    ASSERT_EQ(run.WaitExit(20000), 0) << run.log();
  }
  uint64_t largest = 0;
  const absl::StatusOr<std::vector<RunRecord>> recorded = (*Ledger::Open(ledger_))->List({.stage = "fit"});
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  for (const RunRecord& r : *recorded) largest = std::max(largest, *r.end->facts.memory_peak_bytes);
  EXPECT_GT(largest, 60ull << 20) << "the kernel's peak includes the 60 MiB";

  AgentProcess show({"runs", "show", "fit-1", "--ledger.path", ledger_});
  ASSERT_EQ(show.WaitExit(10000), 0) << show.log();
  EXPECT_EQ(show.log().substr(0, show.log().find('\n')),
            "run fit-1 (stage fit): " + JudgeRun(Recorded("fit-1"), RunsConfig{}).Summary());

  AgentProcess list({"runs", "--ledger.path", ledger_, "list", "--stage", "fit", "--json"});
  ASSERT_EQ(list.WaitExit(10000), 0) << list.log();
  const nlohmann::json runs = nlohmann::json::parse(list.log());
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["id"], "fit-2") << "newest first";
  EXPECT_EQ(runs[0]["limits"]["memory_max_bytes"], 400ull << 20);
  EXPECT_EQ(runs[0]["memory_limit_bytes"], 400ull << 20);
  EXPECT_EQ(runs[0]["oom_kills"]["kernel"], 0);
  EXPECT_EQ(runs[0]["verdict"], VerdictName(JudgeRun(Recorded("fit-2"), RunsConfig{}).kind));

  AgentProcess advise({"advise", "--stage", "fit", "--json", "--ledger.path", ledger_});
  ASSERT_EQ(advise.WaitExit(10000), 0) << advise.log();
  const nlohmann::json a = nlohmann::json::parse(advise.log());
  EXPECT_EQ(a["evidence"]["runs"], 3);
  EXPECT_EQ(a["evidence"]["largest_peak_bytes"], largest);
  // Three runs: the nearest-rank p95 is the largest peak; + 15% of it, rounded up to a MiB.
  const uint64_t mib = 1 << 20;
  const uint64_t expected = (largest + uint64_t(0.15 * double(largest)) + mib - 1) / mib * mib;
  EXPECT_NEAR(a["memory_max_bytes"].get<double>(), double(expected), double(mib));
  EXPECT_GE(a["memory_max_bytes"].get<uint64_t>(), largest);

  AgentProcess too_few({"advise", "--stage", "nothing-here", "--ledger.path", ledger_});
  ASSERT_EQ(too_few.WaitExit(10000), 0);
  EXPECT_THAT(too_few.log(), HasSubstr("not enough runs: 0 finished runs"));

  // A researcher who may not write root's ledger can still read it.
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  AgentProcess nobody({"runs", "list", "--json", "--ledger.path", ledger_}, [] {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(120);
  });
  ASSERT_EQ(nobody.WaitExit(10000), 0) << nobody.log();
  EXPECT_EQ(nlohmann::json::parse(nobody.log()).size(), 3u);
}

TEST_F(LauncherTest, RunsListSinceLeavesOutRunsStartedBeforeIt) {
  AgentProcess run(Args("since-list", "since-new", {}, {"true"}));
  ASSERT_EQ(run.WaitExit(20000), 0) << run.log();
  {
    std::unique_ptr<Ledger> ledger = *Ledger::Open(ledger_);
    RunStart old{.id = "since-old", .stage = "since-list", .command = {"true"},
                 .start = absl::Now() - absl::Hours(2)};
    ASSERT_TRUE(ledger->BeginRun(old).ok());
    RunEnd end{.end = old.start + absl::Seconds(1), .exit_code = 0};
    ASSERT_TRUE(ledger->EndRun(old.id, end).ok());
  }
  auto listed_ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"runs", "list", "--ledger.path", ledger_, "--json"});
    AgentProcess list(args);
    EXPECT_EQ(list.WaitExit(10000), 0) << list.log();
    std::vector<std::string> ids;
    for (const nlohmann::json& r : nlohmann::json::parse(list.log())) ids.push_back(r["id"]);
    return ids;
  };
  EXPECT_EQ(listed_ids({}), (std::vector<std::string>{"since-new", "since-old"}));
  EXPECT_EQ(listed_ids({"--since", "1h"}), std::vector<std::string>{"since-new"});
  EXPECT_EQ(listed_ids({"--since", "3h"}), (std::vector<std::string>{"since-new", "since-old"}));

  AgentProcess bogus({"runs", "list", "--ledger.path", ledger_, "--since", "bogus"});
  EXPECT_NE(bogus.WaitExit(10000), 0) << bogus.log();
  EXPECT_THAT(bogus.log(), HasSubstr("--since \"bogus\" is neither a duration (30m, 24h, 7d: that long ago)"));
}

// A run OOM-killed at 200 MiB that needed 400: the advisor's floor is 1.2 × the limit it was
// killed at, not its peak (the peak is capped at the limit).
TEST_F(LauncherTest, AnOomKillAt200MBumpsTheAdvisedMemoryMaxAbove1point2TimesIt) {
  AgentProcess run(Args("oom-advise", "oom-advise-1", {"--memory-max", "200M"},
                        {"python3", "-c", kHog}));
  ASSERT_EQ(run.WaitExit(30000), 137) << run.log();
  ASSERT_EQ(Recorded("oom-advise-1").end->facts.oom_kills_kernel, 1u);
  const std::string config = dir_ + "/one-run.yaml";
  std::ofstream(config) << "runs:\n  advise:\n    min_runs: 1\n";

  AgentProcess advise({"--config.file", config, "advise", "--stage", "oom-advise", "--json",
                       "--ledger.path", ledger_});
  ASSERT_EQ(advise.WaitExit(10000), 0) << advise.log();
  const nlohmann::json a = nlohmann::json::parse(advise.log());
  const uint64_t limit = 200ull << 20;
  EXPECT_EQ(a["evidence"]["runs"], 1);
  EXPECT_EQ(a["evidence"]["oom_killed_at_limit_bytes"], limit);
  EXPECT_LE(a["evidence"]["largest_peak_bytes"].get<uint64_t>(), limit);
  EXPECT_GE(a["memory_max_bytes"].get<double>(), 1.2 * double(limit));
}

// Every bad input fails before the command starts: the marker file is never made, no cgroup
// is left, and the exit code is the launcher's own (125).
TEST_F(LauncherTest, BadInputFailsClearlyBeforeTheCommandStarts) {
  const std::string marker = dir_ + "/ran";
  const std::vector<std::string> touch = {"touch", marker};
  ASSERT_EQ(AgentProcess(Args("s", "taken", {}, {"true"})).WaitExit(20000), 0);
  std::filesystem::create_directories(RunDir("s", "has-cgroup"));
  std::filesystem::create_directories(dir_ + "/a-dir");
  std::ofstream(dir_ + "/notes.txt") << "not a ledger\n";
  std::ofstream(dir_ + "/plain") << "x";

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  auto with_ledger = [&](std::string path) {
    std::vector<std::string> a = Args("s", "", {}, touch);
    a[4] = path;
    return a;
  };
  const std::vector<Case> cases = {
      {Args("bad/stage", "", {}, touch), "stage name \"bad/stage\" is not valid"},
      {Args("s", "../escape", {}, touch), "run id \"../escape\" is not valid"},
      {Args("s", "taken", {}, touch), "is in the ledger"},
      {Args("s", "has-cgroup", {}, touch), "exists already"},
      {Args("s", "", {"--memory-max", "lots"}, touch), "--memory-max \"lots\" is not a size"},
      {Args("s", "", {"--cpu-max", "0.001"}, touch), "the kernel refused --cpu-max 0.001"},
      {Args("s", "", {"--memory-max", "100"}, touch), "rounded it down to 0 bytes"},
      {with_ledger(dir_ + "/a-dir"), "is a directory"},
      {with_ledger(dir_ + "/plain/ledger.db"), "pass --ledger.path"},
      {with_ledger(dir_ + "/notes.txt"), "is not a stagewatch ledger"},
  };
  for (const Case& c : cases) {
    AgentProcess run(c.args);
    EXPECT_EQ(run.WaitExit(20000), 125) << c.message << ": " << run.log();
    EXPECT_THAT(run.log(), HasSubstr(c.message));
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran for: " << c.message;
  }
  EXPECT_EQ(ReadFile(dir_ + "/notes.txt"), "not a ledger\n") << "a non-ledger is never written";
  // A run recorded before the kernel refused its cgroup's limits is withdrawn.
  absl::StatusOr<std::vector<RunRecord>> runs = (*Ledger::OpenForReading(ledger_))->List({});
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].start.id, "taken");
  std::filesystem::remove(RunDir("s", "has-cgroup"));
  for (const auto& entry : std::filesystem::directory_iterator(cgroup_->dir() + "/stagewatch/s")) {
    if (entry.is_directory()) ADD_FAILURE() << "left behind: " << entry.path();
  }
  rmdir((cgroup_->dir() + "/stagewatch/s").c_str());
  rmdir((cgroup_->dir() + "/stagewatch").c_str());
}

}  // namespace
}  // namespace stagewatch::testing
