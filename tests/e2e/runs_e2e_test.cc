// The agent's side of runs, through the built binary, a real SQLite ledger and real cgroups: a
// cgroup made beneath a stage without the launcher is a run the agent records and closes; a
// launcher run killed by the kernel's OOM killer gets the agent's OOM facts and counts as
// interrupted; an agent killed with SIGKILL mid-run closes the run when it comes back.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/runs_config.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs/verdict.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;
using testing::WaitUntil;

constexpr char kHog[] = "a = b'x' * (400 * 1024 * 1024)";

class RunsE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    char tmpl[] = "/tmp/stagewatch-runs-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ledger_ = dir_ + "/ledger.db";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<AgentProcess> StartAgent() {
    auto agent = std::make_unique<AgentProcess>(std::vector<std::string>{
        "agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger_});
    EXPECT_TRUE(agent->WaitListening()) << agent->log();
    return agent;
  }

  // The ledger's run whose cgroup is `cgroup_path`, once `condition` holds for it.
  std::optional<RunRecord> RunWhen(const std::string& cgroup_path,
                                   const std::function<bool(const RunRecord&)>& condition) {
    std::optional<RunRecord> found;
    WaitUntil(
        [&] {
          absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
          if (!ledger.ok()) return false;
          absl::StatusOr<std::vector<RunRecord>> runs = (*ledger)->List({});
          if (!runs.ok()) return false;
          for (const RunRecord& r : *runs) {
            if (r.start.cgroup_path == cgroup_path && condition(r)) {
              found = r;
              return true;
            }
          }
          return false;
        },
        15000);
    return found;
  }

  static double Metric(AgentProcess& agent, const std::string& series) {
    return ValueOr(ParseExposition(agent.Get("/metrics").value_or("")), series, -1);
  }

  std::string dir_;
  std::string ledger_;
};

TEST_F(RunsE2E, ACgroupMadeBeneathAStageIsARunRecordedAndClosedAtRmdir) {
  TestCgroup top("stagewatch/swdiscovered");
  auto agent = StartAgent();
  const std::string job_dir = top.dir() + "/job_42";
  const std::string job_path = top.path() + "/job_42";
  ASSERT_EQ(mkdir(job_dir.c_str(), 0755), 0) << strerror(errno);
  const pid_t job = testing::SpawnIn({job_dir}, "sw-run-job", [] { usleep(300000); });
  ASSERT_EQ(testing::WaitForChild(job), 0);

  std::optional<RunRecord> open = RunWhen(job_path, [](const RunRecord& r) { return !r.end; });
  ASSERT_TRUE(open) << agent->log();
  EXPECT_EQ(open->start.id, "job_42");
  EXPECT_EQ(open->start.stage, "swdiscovered");
  EXPECT_EQ(open->start.source, RunSource::kDiscovered);
  ASSERT_EQ(rmdir(job_dir.c_str()), 0) << strerror(errno);

  std::optional<RunRecord> closed = RunWhen(job_path, [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << agent->log();
  EXPECT_EQ(closed->end->closed_by, RunCloser::kAgent);
  EXPECT_FALSE(closed->end->exit_code);
  EXPECT_TRUE(closed->agent_observed);
  ASSERT_TRUE(closed->agent.run_queue_wait_seconds);
  EXPECT_GE(*closed->agent.run_queue_wait_seconds, 0);
  EXPECT_TRUE(closed->agent.preemptors_observed);
  EXPECT_EQ(closed->end->facts.oom_kills_kernel, 0u);
  const std::string verdict(VerdictName(JudgeRun(*closed, RunsConfig{}).kind));
  EXPECT_TRUE(verdict == "clean" || verdict == "degraded") << verdict;
  const std::string total = absl::StrCat(
      R"(stagewatch_runs_total{pipeline_stage="swdiscovered",verdict=")", verdict, R"("})");
  EXPECT_TRUE(WaitUntil([&] { return Metric(*agent, total) == 1; }, 5000)) << total;
  EXPECT_EQ(Metric(*agent, absl::StrCat(R"(stagewatch_run_info{pipeline_stage="swdiscovered",)",
                                        R"(run_id="job_42",verdict=")", verdict, R"("})")),
            1);
}

TEST_F(RunsE2E, ALauncherRunOomKilledGetsTheAgentsOomFactsAndCountsAsInterrupted) {
  TestCgroup parent("runs-e2e", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  const std::string interrupted =
      R"(stagewatch_runs_total{pipeline_stage="swoomrun",verdict="interrupted"})";
  const double before = Metric(*agent, interrupted);
  EXPECT_LE(before, 0);  // absent (-1) or 0: no run of the stage yet

  AgentProcess launcher({"run", "--stage", "swoomrun", "--run-id", "oom-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--memory-max", "64M", "--",
                         "python3", "-c", kHog});
  EXPECT_EQ(launcher.WaitExit(60000), 137) << launcher.log();

  const std::string run_path = parent.path() + "/stagewatch/swoomrun/oom-1";
  std::optional<RunRecord> run = RunWhen(run_path, [](const RunRecord& r) {
    return r.end && !r.agent.oom_victims.empty() && r.agent.run_queue_wait_seconds;
  });
  ASSERT_TRUE(run) << agent->log();
  EXPECT_EQ(run->end->closed_by, RunCloser::kLauncher);  // the launcher closed it, once
  ASSERT_TRUE(run->end->facts.oom_kills_kernel);
  uint64_t kernel_victims = 0;
  for (const OomVictim& v : run->agent.oom_victims) kernel_victims += v.kind == "kernel";
  EXPECT_EQ(kernel_victims, *run->end->facts.oom_kills_kernel);  // memory.events oom_kill
  EXPECT_EQ(run->agent.oom_victims.front().comm, "python3");
  EXPECT_EQ(run->agent.oom_kills_userspace, 0u);
  EXPECT_EQ(JudgeRun(*run, RunsConfig{}).kind, VerdictKind::kInterrupted);
  EXPECT_TRUE(WaitUntil([&] { return Metric(*agent, interrupted) == 1; }, 5000))
      << Metric(*agent, interrupted) << "\n" << agent->log();
  EXPECT_EQ(Metric(*agent, R"(stagewatch_run_info{pipeline_stage="swoomrun",run_id="oom-1",)"
                           R"(verdict="interrupted"})"),
            1);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
  ASSERT_TRUE(ledger.ok());
  EXPECT_EQ((*ledger)->List({.stage = "swoomrun"})->size(), 1u) << "the agent doubled the run";
}

TEST_F(RunsE2E, TheLaunchersVerdictWaitsForTheAgentsFactsOfTheEnd) {
  TestCgroup parent("runs-e2e-wait", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  AgentProcess launcher({"run", "--stage", "swverdictwait", "--run-id", "wait-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "0.2"});
  ASSERT_EQ(launcher.WaitExit(30000), 0) << launcher.log();
  const std::string printed = launcher.log();
  EXPECT_EQ(printed.find("unobserved"), std::string::npos) << printed;
  EXPECT_TRUE(printed.find("run wait-1 clean") != std::string::npos ||
              printed.find("run wait-1 degraded") != std::string::npos)
      << printed;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
  ASSERT_TRUE(ledger.ok());
  absl::StatusOr<std::optional<RunRecord>> run = (*ledger)->Get("wait-1");
  ASSERT_TRUE(run.ok() && *run);
  EXPECT_TRUE((*run)->agent.saw_end);
  EXPECT_EQ((*run)->end->closed_by, RunCloser::kLauncher);
}

TEST_F(RunsE2E, AnAgentKilledMidRunClosesTheRunWhenItComesBack) {
  TestCgroup top("stagewatch/swrestart");
  const std::string job_dir = top.dir() + "/job_7";
  const std::string job_path = top.path() + "/job_7";
  {
    auto agent = StartAgent();
    ASSERT_EQ(mkdir(job_dir.c_str(), 0755), 0) << strerror(errno);
    ASSERT_TRUE(RunWhen(job_path, [](const RunRecord& r) { return !r.end; })) << agent->log();
    ASSERT_EQ(kill(agent->pid(), SIGKILL), 0);
    EXPECT_EQ(agent->WaitExit(), 128 + SIGKILL);
  }
  ASSERT_EQ(rmdir(job_dir.c_str()), 0) << strerror(errno);  // the run ends while no agent runs
  auto agent = StartAgent();
  std::optional<RunRecord> closed = RunWhen(job_path, [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << agent->log();
  EXPECT_EQ(closed->start.id, "job_7");
  EXPECT_EQ(closed->end->closed_by, RunCloser::kAgent);
  // Nobody saw its end: what only the agent sees at the end is unobserved, not zero.
  EXPECT_FALSE(closed->agent.run_queue_wait_seconds);
  EXPECT_EQ(JudgeRun(*closed, RunsConfig{}).kind, VerdictKind::kUnobserved);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Metric(*agent,
                      R"(stagewatch_runs_total{pipeline_stage="swrestart",verdict="unobserved"})") ==
               1;
      },
      5000))
      << agent->log();
}

TEST_F(RunsE2E, ARunWhoseLauncherDiedIsClosedByTheAgentWhenItsCgroupGoes) {
  TestCgroup parent("runs-e2e-orphan", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  AgentProcess launcher({"run", "--stage", "sworphan", "--run-id", "orphan-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "60"});
  const std::string run_path = parent.path() + "/stagewatch/sworphan/orphan-1";
  ASSERT_TRUE(RunWhen(run_path, [](const RunRecord& r) { return !r.end; })) << launcher.log();
  // The row is written before the command joins the cgroup: wait for the command too.
  const std::string run_dir = parent.dir() + "/stagewatch/sworphan/orphan-1";
  std::string procs;
  ASSERT_TRUE(WaitUntil(
      [&] { return !(procs = testing::ReadFile(run_dir + "/cgroup.procs")).empty(); }, 15000))
      << launcher.log();
  ASSERT_EQ(kill(launcher.pid(), SIGKILL), 0);
  EXPECT_EQ(launcher.WaitExit(), 128 + SIGKILL);

  // What the launcher would have done: end the command, remove its cgroups (deepest first).
  for (absl::string_view pid : absl::StrSplit(procs, '\n', absl::SkipEmpty())) {
    kill(std::stoi(std::string(pid)), SIGKILL);
  }
  for (const char* controller : {"", "cpu", "cpuacct", "pressure"}) {
    const std::string base = *controller ? parent.dir(controller) : parent.dir();
    for (const char* sub : {"/stagewatch/sworphan/orphan-1", "/stagewatch/sworphan", "/stagewatch"}) {
      WaitUntil([&] { return rmdir((base + sub).c_str()) == 0 || errno == ENOENT; }, 5000);
    }
  }
  std::optional<RunRecord> closed = RunWhen(run_path, [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << agent->log();
  EXPECT_EQ(closed->start.source, RunSource::kLauncher);  // its own row, not a second one
  EXPECT_EQ(closed->end->closed_by, RunCloser::kAgent);
  EXPECT_TRUE(closed->agent_observed);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
  ASSERT_TRUE(ledger.ok());
  EXPECT_EQ((*ledger)->List({.stage = "sworphan"})->size(), 1u);
}

}  // namespace
}  // namespace stagewatch
