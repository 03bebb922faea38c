// The agent's side of runs, through the built binary, a real SQLite ledger and real cgroups: a
// cgroup made beneath a stage without the launcher is a run the agent records and closes; a
// launcher run killed by the kernel's OOM killer gets the agent's OOM facts and counts as
// interrupted; an agent killed with SIGKILL mid-run closes the run when it comes back. A run
// no launcher started gets the launcher's figures from the agent: the kernel's exact memory
// peak (read in the kernel at rmdir, once the cgroup's files are gone), mean and p95 of its
// usage, CPU seconds, throttling and a time series, checked against the kernel's own files
// read just before the removal and the process's own rusage. A launcher SIGKILLed at any
// moment leaves no run open and no cgroup behind: the agent closes the run when its command's
// last task exits, at that moment, and at its start for runs left while no agent ran.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/numa_stat.h"
#include "config/runs_config.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/verdict.h"
#include "killed_launchers.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;
using testing::WaitUntil;

constexpr char kHog[] = "a = b'x' * (400 * 1024 * 1024)";

std::string ReadFile(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

uint64_t ReadNumber(const std::string& file) {
  uint64_t v = 0;
  std::string text = ReadFile(file);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  EXPECT_TRUE(absl::SimpleAtoi(text, &v)) << file << ": \"" << text << "\"";
  return v;
}

void WriteFile(const std::string& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.close();
  ASSERT_TRUE(out) << "cannot write " << value << " to " << file;
}

// A run's cgroup made by hand beneath a stage's top, in the keyed hierarchy and its cpu,
// cpuacct and cgroup2 mirrors (on v2 one directory), as a job scheduler makes one. Removed at
// the end whatever happened, its process killed first.
class HandMadeRun {
 public:
  HandMadeRun(const TestCgroup& top, const std::string& name)
      : path_(top.path() + "/" + name), name_(name), top_(top), v2_(top.v2()) {
    if (v2_) WriteFile(top.dir() + "/cgroup.subtree_control", "+memory +cpu");
    dirs_.push_back(top.dir() + "/" + name);
    for (const char* controller : {"cpu", "cpuacct", "pressure"}) {
      const std::string mirror = top.dir(controller);
      if (mirror.empty()) continue;
      const std::string dir = mirror + "/" + name;
      if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
    }
    for (const std::string& dir : dirs_) {
      EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
    }
  }
  ~HandMadeRun() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    Remove();
  }

  const std::string& path() const { return path_; }
  const std::string& dir() const { return dirs_.front(); }  // the keyed hierarchy's
  // Its directory in `controller`'s hierarchy ("cpu", "cpuacct"; on v2 the one directory).
  std::string dir(const char* controller) const { return top_.dir(controller) + "/" + name_; }

  void Spawn(const std::string& comm, std::function<void()> body) {
    pid_ = testing::SpawnIn(dirs_, comm, std::move(body));
  }
  // Waits for the process; its CPU time by its own rusage.
  double WaitSeconds() {
    int status = 0;
    rusage usage{};
    EXPECT_EQ(wait4(pid_, &status, 0, &usage), pid_);
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
           usage.ru_stime.tv_usec / 1e6;
  }
  // The kernel's own peak, just before the cgroup goes.
  uint64_t KernelPeak() const {
    return ReadNumber(dir() + (v2_ ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  }
  void SetCpuQuota(uint64_t quota_us, uint64_t period_us) {
    if (v2_) return WriteFile(dir("cpu") + "/cpu.max", absl::StrCat(quota_us, " ", period_us));
    WriteFile(dir("cpu") + "/cpu.cfs_period_us", absl::StrCat(period_us));
    WriteFile(dir("cpu") + "/cpu.cfs_quota_us", absl::StrCat(quota_us));
  }
  // Mirrors first, the keyed directory (whose rmdir the agent hears) last.
  void Remove() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir(it->c_str());
    dirs_.clear();
  }

 private:
  std::string path_;
  std::string name_;
  const TestCgroup& top_;
  bool v2_;
  std::vector<std::string> dirs_;
  pid_t pid_ = -1;
};


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

  std::unique_ptr<AgentProcess> StartAgent(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"agent", "--web.listen-address", "127.0.0.1:0",
                                     "--ledger.path", ledger_};
    args.insert(args.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<AgentProcess>(args);
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
    if (!found) std::printf("no run at %s met the condition; the ledger has: %s\n",
                            cgroup_path.c_str(), RowsAt(cgroup_path).c_str());
    return found;
  }

  // The ledger's rows whose cgroup is `cgroup_path`, in brief: what a condition looks at.
  std::string RowsAt(const std::string& cgroup_path) {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
    if (!ledger.ok()) return ledger.status().ToString();
    absl::StatusOr<std::vector<RunRecord>> runs = (*ledger)->List({});
    if (!runs.ok()) return runs.status().ToString();
    std::string out;
    for (const RunRecord& r : *runs) {
      if (r.start.cgroup_path != cgroup_path) continue;
      absl::StrAppend(&out, "[", r.start.id, ": ", r.end ? "ended" : "open",
                      ", agent observed ", r.agent_observed ? "yes" : "no",
                      ", saw end ", r.agent.saw_end ? "yes" : "no",
                      ", OOM victims ", r.agent.oom_victims.size(), ", run-queue wait ",
                      r.agent.run_queue_wait_seconds ? "read" : "none", "] ");
    }
    return out.empty() ? "no row" : out;
  }

  // What is left of the launcher's cgroups beneath `parent`, in any hierarchy.
  static std::vector<std::string> LeftBehind(const TestCgroup& parent) {
    std::vector<std::string> left;
    for (const char* controller : {"", "cpu", "cpuacct", "pressure"}) {
      const std::string base = *controller ? parent.dir(controller) : parent.dir();
      if (!base.empty() && std::filesystem::exists(base + "/stagewatch")) {
        left.push_back(base + "/stagewatch");
      }
    }
    return left;
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

// Who preempted whom, the right way round. A stage that wakes every millisecond for a short
// burst takes the CPU from a run that spins on the same CPU: the spinner is preempted by it at
// nearly every wake-up, and the waker hardly ever by the spinner (its bursts end in a sleep,
// not a preemption). /metrics names the waker as the spinner's preempting_stage, and the
// spinner's run lists the waker among its preemptors, as many times as /metrics counts.
TEST_F(RunsE2E, APreemptedRunAndItsStageNameTheStageThatPreemptedThem) {
  TestCgroup spinner("stagewatch/swspinner");
  TestCgroup waker("stagewatch/swwaker");
  auto agent = StartAgent();
  const std::string job_dir = spinner.dir() + "/job_spin";
  const std::string job_path = spinner.path() + "/job_spin";
  ASSERT_EQ(mkdir(job_dir.c_str(), 0755), 0) << strerror(errno);
  const pid_t w = waker.Spawn("sw-waker", [] {
    testing::PinTo(0);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
    while (std::chrono::steady_clock::now() < end) {
      const auto burst = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < burst) {
      }
      usleep(1000);
    }
  });
  const pid_t v = testing::SpawnIn({job_dir}, "sw-spinner", [] {
    testing::PinTo(0);
    testing::BusyFor(std::chrono::milliseconds(1000));
  });
  ASSERT_EQ(testing::WaitForChild(w), 0);
  ASSERT_EQ(testing::WaitForChild(v), 0);

  const std::string by_waker =
      R"(stagewatch_cpu_preemptions_total{pipeline_stage="swspinner",preempting_stage="swwaker"})";
  const std::string by_spinner =
      R"(stagewatch_cpu_preemptions_total{pipeline_stage="swwaker",preempting_stage="swspinner"})";
  // The trackers collect every few seconds. Both tasks exited before the first scrape, so a
  // collection that counted both exits read the preemptions after them: its counts are final.
  // (Two equal scrapes are not enough: both can come from one collection made mid-burst.)
  const std::string spinner_exits =
      R"(stagewatch_processes_exited_total{pipeline_stage="swspinner"})";
  const std::string waker_exits = R"(stagewatch_processes_exited_total{pipeline_stage="swwaker"})";
  double spinner_preempted = 0, waker_preempted = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const testing::Scrape m = ParseExposition(agent->Get("/metrics").value_or(""));
        spinner_preempted = ValueOr(m, by_waker, 0);
        waker_preempted = ValueOr(m, by_spinner, 0);
        return ValueOr(m, spinner_exits, 0) >= 1 && ValueOr(m, waker_exits, 0) >= 1;
      },
      15000))
      << agent->log();
  std::printf("swspinner preempted by swwaker %.0f times, swwaker by swspinner %.0f times\n",
              spinner_preempted, waker_preempted);
  EXPECT_GT(spinner_preempted, 20);
  EXPECT_GT(spinner_preempted, 3 * waker_preempted);

  ASSERT_EQ(rmdir(job_dir.c_str()), 0) << strerror(errno);
  std::optional<RunRecord> closed = RunWhen(job_path, [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << agent->log();
  ASSERT_TRUE(closed->agent.preemptors_observed);
  std::string preemptors;
  for (const auto& [stage, n] : closed->agent.preemptors) {
    absl::StrAppend(&preemptors, " ", stage, " ×", n);
  }
  ASSERT_TRUE(closed->agent.preemptors.contains("swwaker")) << "preemptors:" << preemptors;
  // Its job cgroup is the stage's only one that ran: the run's count is the stage's.
  const double by_waker_in_ledger = double(closed->agent.preemptors.at("swwaker"));
  EXPECT_GT(by_waker_in_ledger, 3 * waker_preempted) << "preemptors:" << preemptors;
  EXPECT_NEAR(by_waker_in_ledger, spinner_preempted, 0.1 * spinner_preempted);
}

// A launcher that died and that its parent has not reaped is a zombie: dead, whatever its
// /proc entry still says. The agent closes its run when the command's last task exits, while
// the launcher is still unreaped.
TEST_F(RunsE2E, ARunOfAZombieLauncherIsClosedWhenItsCommandEnds) {
  TestCgroup parent("runs-e2e-zombie", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  const std::string stop = dir_ + "/stop";
  AgentProcess launcher({"run", "--stage", "swzombie", "--run-id", "zombie-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sh", "-c",
                         "while [ ! -e " + stop + " ]; do sleep 0.05; done"});
  const std::string run_path = parent.path() + "/stagewatch/swzombie/zombie-1";
  ASSERT_TRUE(RunWhen(run_path, [](const RunRecord& r) { return !r.end; })) << launcher.log();
  // Its row comes before its cgroup and its command: killed only once the command runs there
  // (killed sooner, on a loaded host, it left a row and no command to end).
  const std::string procs = parent.dir() + "/stagewatch/swzombie/zombie-1/cgroup.procs";
  ASSERT_TRUE(WaitUntil([&] { return !testing::ReadFile(procs).empty(); }, 10000))
      << launcher.log();
  // Killed and not waited for: it stays a zombie of this process.
  ASSERT_EQ(kill(launcher.pid(), SIGKILL), 0);
  const std::string stat = "/proc/" + std::to_string(launcher.pid()) + "/stat";
  auto zombie = [&] { return testing::ReadFile(stat).find(") Z ") != std::string::npos; };
  ASSERT_TRUE(WaitUntil(zombie, 5000)) << testing::ReadFile(stat);
  std::ofstream(stop) << "";  // its command ends

  std::optional<RunRecord> closed = RunWhen(run_path, [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << "the run of a zombie launcher stayed open\n" << agent->log();
  EXPECT_EQ(closed->end->closed_by, RunCloser::kAgent);
  EXPECT_TRUE(zombie()) << "reaped before the agent closed the run: " << testing::ReadFile(stat);
  EXPECT_EQ(launcher.WaitExit(), 128 + SIGKILL);
  EXPECT_TRUE(WaitUntil([&] { return LeftBehind(parent).empty(); }, 5000))
      << LeftBehind(parent).front();
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

// A log store gets each finished run from the agent's log: one JSON object with its id, stage,
// verdict, reasons and figures (--log.format json; logfmt: LogRunFinishedTest).
TEST_F(RunsE2E, EachFinishedRunIsOneStructuredLogLine) {
  TestCgroup parent("runs-e2e", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent({"--log.format", "json"});
  AgentProcess launcher({"run", "--stage", "swlogged", "--run-id", "logged-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--memory-max", "64M", "--",
                         "python3", "-c", kHog});
  EXPECT_EQ(launcher.WaitExit(60000), 137) << launcher.log();
  std::vector<nlohmann::json> lines;
  ASSERT_TRUE(WaitUntil([&] {
    lines.clear();
    std::istringstream log(agent->log());
    for (std::string line; std::getline(log, line);) {
      const nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
      if (entry.is_object() && entry.value("msg", "") == "run finished") lines.push_back(entry);
    }
    return !lines.empty();
  }, 15000)) << agent->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a second line would be a bug
  ASSERT_EQ(lines.size(), 1u) << agent->log();
  const nlohmann::json& e = lines[0];
  EXPECT_EQ(e.value("run_id", ""), "logged-1") << e.dump();
  EXPECT_EQ(e.value("stage", ""), "swlogged");
  EXPECT_FALSE(e.contains("pipeline"));  // a run without one
  EXPECT_EQ(e.value("verdict", ""), "interrupted");
  EXPECT_EQ(e.value("reasons", "").rfind("oom_kill", 0), 0u) << e.dump();  // interruptions first
  EXPECT_EQ(e.value("signal", ""), "SIGKILL");
  EXPECT_EQ(e.value("memory_limit_bytes", 0.0), 64.0 * 1024 * 1024);
  EXPECT_GE(e.value("oom_kills", 0.0), 1);
  EXPECT_GT(e.value("wall_seconds", 0.0), 0);
  EXPECT_GT(e.value("cpu_seconds", 0.0), 0);
  EXPECT_GT(e.value("memory_peak_bytes", 0.0), 32.0 * 1024 * 1024);
}

TEST_F(RunsE2E, TheLaunchersVerdictWaitsForTheAgentsFactsOfTheEnd) {
  TestCgroup parent("runs-e2e-wait", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  AgentProcess launcher({"run", "--stage", "swverdictwait", "--run-id", "wait-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "0.2"});
  ASSERT_EQ(launcher.WaitExit(30000), 0) << launcher.log();
  const std::string printed = launcher.log();
  EXPECT_EQ(printed.find("unobserved"), std::string::npos) << printed;
  EXPECT_TRUE(printed.find("run wait-1 of swverdictwait clean") != std::string::npos ||
              printed.find("run wait-1 of swverdictwait degraded") != std::string::npos)
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

TEST_F(RunsE2E, AHandMadeRunGetsTheKernelsPeakUsageCpuAndASeries) {
  TestCgroup top("stagewatch/swdiscfacts", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  HandMadeRun run(top, "job_7");
  constexpr uint64_t kBytes = uint64_t{96} << 20;
  // Allocates 96 MiB, burns a second of CPU, and holds the memory while the agent samples.
  run.Spawn("sw-disc-alloc", [] {
    testing::TouchAnonymous(kBytes);
    testing::BusyFor(std::chrono::milliseconds(1000));
    usleep(4000 * 1000);  // recorded after 1 s, then sampled every second
  });
  const double rusage_seconds = run.WaitSeconds();
  const uint64_t kernel_peak = run.KernelPeak();
  const double cpuacct_seconds = top.v2() ? 0 : ReadNumber(run.dir("cpuacct") + "/cpuacct.usage") / 1e9;
  ASSERT_GE(kernel_peak, kBytes);
  run.Remove();

  std::optional<RunRecord> r = RunWhen(run.path(), [](const RunRecord& x) { return !!x.end; });
  ASSERT_TRUE(r) << agent->log();
  EXPECT_EQ(r->start.source, RunSource::kDiscovered);
  EXPECT_EQ(r->end->closed_by, RunCloser::kAgent);
  const CgroupFacts& f = r->end->facts;
  ASSERT_TRUE(f.memory_peak_bytes) << agent->log();
  EXPECT_NEAR(double(*f.memory_peak_bytes), double(kernel_peak), 0.03 * kernel_peak);
  EXPECT_FALSE(f.memory_limit_bytes);  // none was set
  ASSERT_TRUE(f.memory_mean_bytes);
  ASSERT_TRUE(f.memory_p95_bytes);
  EXPECT_GE(*f.memory_p95_bytes, kBytes * 9 / 10);  // sampled while the memory was held
  EXPECT_LE(*f.memory_p95_bytes, kernel_peak);
  EXPECT_LE(*f.memory_mean_bytes, *f.memory_p95_bytes);
  ASSERT_TRUE(f.near_limit_seconds);
  EXPECT_EQ(*f.near_limit_seconds, 0);  // unlimited
  ASSERT_TRUE(f.cpu_seconds);
  EXPECT_NEAR(*f.cpu_seconds, rusage_seconds, 0.05 * rusage_seconds + 0.02);
  if (!top.v2()) {
    EXPECT_NEAR(*f.cpu_seconds, cpuacct_seconds, 0.03 * cpuacct_seconds);
  }

  std::optional<std::string> page = agent->Get("/api/v1/runs/" + r->start.id);
  ASSERT_TRUE(page) << agent->log();
  nlohmann::json j = nlohmann::json::parse(*page);
  ASSERT_GE(j["samples"].size(), 2u) << *page;
  uint64_t most = 0;
  for (const auto& s : j["samples"]) {
    if (s["memory_bytes"].is_number()) most = std::max(most, s["memory_bytes"].get<uint64_t>());
  }
  EXPECT_GE(most, kBytes * 9 / 10);
  EXPECT_LE(most, kernel_peak);

  // Where it ran, as for a launched run: its CPU time by node adds up to its CPU time, and its
  // memory by node was sampled while it held the 96 MiB.
  ASSERT_TRUE(r->agent.node_migrations) << agent->log();
  double by_node = 0;
  for (const auto& [node, seconds] : r->agent.cpu_seconds_by_node) by_node += seconds;
  EXPECT_NEAR(by_node, rusage_seconds, 0.05 * rusage_seconds + 0.02);
  EXPECT_GE(NumaMemoryBytes(f.memory_by_node), kBytes * 9 / 10);
  EXPECT_LE(NumaMemoryBytes(f.memory_by_node), kernel_peak + (uint64_t{4} << 20));
  EXPECT_EQ(j["placement"]["node_migrations"], *r->agent.node_migrations) << *page;
}

// A job scheduler's cgroup with every limit set by hand: the run's row holds the figures the
// kernel's files held, those read when it was recorded while it lives, and the ones changed
// mid-run at its end.
TEST_F(RunsE2E, AHandMadeRunRecordsTheLimitsItsCgroupFilesHold) {
  TestCgroup top("stagewatch/swdisclimits", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  HandMadeRun run(top, "job_9");
  const bool v2 = top.v2();
  const std::string mem = run.dir(), cpu = run.dir("cpu");
  WriteFile(mem + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), absl::StrCat(512 << 20));
  WriteFile(mem + (v2 ? "/memory.high" : "/memory.soft_limit_in_bytes"), absl::StrCat(128 << 20));
  run.SetCpuQuota(50000, 100000);
  WriteFile(cpu + (v2 ? "/cpu.weight" : "/cpu.shares"), v2 ? "50" : "512");
  run.Spawn("sw-disc-limits", [] { usleep(10 * 1000 * 1000); });

  std::optional<RunRecord> open = RunWhen(run.path(), [](const RunRecord& x) {
    return !x.end && x.start.limits.cpu_max_cores.has_value();
  });
  ASSERT_TRUE(open) << agent->log();
  const RunLimits& first = open->start.limits;
  EXPECT_EQ(first.memory_max_bytes, uint64_t{512} << 20);
  EXPECT_EQ(first.memory_high_bytes, uint64_t{128} << 20);
  EXPECT_DOUBLE_EQ(*first.cpu_max_cores, 0.5);
  EXPECT_EQ(first.cpu_weight, 50u);

  // Changed mid-run, as a scheduler resizes a job: the end has the new ones.
  WriteFile(mem + (v2 ? "/memory.high" : "/memory.soft_limit_in_bytes"), absl::StrCat(96 << 20));
  run.SetCpuQuota(30000, 100000);
  run.WaitSeconds();
  const uint64_t kernel_max = ReadNumber(mem + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  const uint64_t kernel_high =
      ReadNumber(mem + (v2 ? "/memory.high" : "/memory.soft_limit_in_bytes"));
  const std::string kernel_quota =
      ReadFile(cpu + (v2 ? "/cpu.max" : "/cpu.cfs_quota_us"));
  run.Remove();

  std::optional<RunRecord> r = RunWhen(run.path(), [](const RunRecord& x) { return !!x.end; });
  ASSERT_TRUE(r) << agent->log();
  EXPECT_EQ(r->start.source, RunSource::kDiscovered);
  const RunLimits& l = r->start.limits;
  EXPECT_EQ(l.memory_max_bytes, kernel_max);
  EXPECT_EQ(l.memory_high_bytes, kernel_high);
  EXPECT_EQ(kernel_high, uint64_t{96} << 20);
  ASSERT_TRUE(l.cpu_max_cores) << agent->log();
  EXPECT_DOUBLE_EQ(*l.cpu_max_cores, 0.3) << "the kernel held " << kernel_quota;
  EXPECT_EQ(l.cpu_weight, 50u);
  EXPECT_EQ(r->end->facts.memory_limit_bytes, kernel_max);

  AgentProcess show({"runs", "show", r->start.id, "--ledger.path", ledger_});
  ASSERT_EQ(show.WaitExit(10000), 0) << show.log();
  const std::string shown = show.log();
  EXPECT_NE(shown.find("memory-max 512.0 MiB, memory-high 96.0 MiB, cpu-max 0.3, cpu-weight 50"),
            std::string::npos)
      << shown;
}

TEST_F(RunsE2E, AHandMadeRunThrottledByItsCpuQuotaIsDegradedByThrottling) {
  TestCgroup top("stagewatch/swdiscthrottle", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  HandMadeRun run(top, "job_8");
  run.SetCpuQuota(20000, 100000);  // 0.2 of a CPU
  run.Spawn("sw-disc-busy", [] {
    testing::BusyFor(std::chrono::milliseconds(2500));
    usleep(1500 * 1000);  // the agent samples the throttling totals after the busy loop
  });
  run.WaitSeconds();
  const std::string stat = ReadFile(run.dir("cpu") + "/cpu.stat");
  absl::StatusOr<CpuCgroupStats> cpu =
      top.v2() ? ParseCpuStatV2(stat, "cpu.stat") : ParseCpuStatV1(stat, "cpu.stat");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const uint64_t throttled = cpu->nr_throttled.value_or(0);
  ASSERT_GT(throttled, 5u) << "the kernel did not throttle the busy loop";
  run.Remove();

  std::optional<RunRecord> r = RunWhen(run.path(), [](const RunRecord& x) { return !!x.end; });
  ASSERT_TRUE(r) << agent->log();
  ASSERT_TRUE(r->end->facts.cpu_throttled_seconds) << agent->log();
  ASSERT_TRUE(r->end->facts.cpu_throttled_wall_seconds);
  EXPECT_GT(*r->end->facts.cpu_throttled_wall_seconds, 1.0);  // 80% of 2.5 s held back
  const Verdict v = JudgeRun(*r, RunsConfig{});
  bool throttling = false;
  for (const VerdictReason& reason : v.reasons) {
    throttling |= reason.cause == "cpu_throttling";
    EXPECT_LE(*reason.share, 1) << reason.cause;
  }
  EXPECT_TRUE(throttling) << v.Summary();
}

// When a file was last modified (a command's marker), or nullopt when there is none.
std::optional<absl::Time> Modified(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return absl::TimeFromTimespec(st.st_mtim);
}

// Launchers SIGKILLed at random moments of short runs while an agent watches: every run the
// launchers recorded ends when its command's last task exited (the kernel's populated flip),
// or at its start where no command ran, and its cgroups go in every hierarchy.
TEST_F(RunsE2E, RunsOfLaunchersKilledAtRandomMomentsEndWhenTheirCommandsEnd) {
  TestCgroup parent("runs-e2e-killed", {"cpu", "cpuacct", "pressure"});
  auto agent = StartAgent();
  const testing::KilledLaunches killed = testing::LaunchAndKillAtRandom(
      15, dir_, [&](const std::string& id, const std::string& command) {
        return std::make_unique<AgentProcess>(std::vector<std::string>{
            "run", "--stage", "swkilled", "--run-id", id, "--ledger.path", ledger_,
            "--cgroup.parent", parent.path(), "--", "sh", "-c", command});
      });
  const unsigned seed = killed.seed;
  std::map<std::string, RunRecord> by_id;
  ASSERT_TRUE(WaitUntil(
      [&] {
        absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
        if (!ledger.ok()) return false;
        absl::StatusOr<std::vector<RunRecord>> rows = (*ledger)->List({.stage = "swkilled"});
        if (!rows.ok()) return false;
        by_id.clear();
        for (const RunRecord& r : *rows) by_id[r.start.id] = r;
        return std::all_of(rows->begin(), rows->end(), [](const RunRecord& r) { return !!r.end; });
      },
      10000))
      << "seed " << seed << "\n" << agent->log();
  int orphans = 0;
  for (const testing::KilledLaunch& run : killed.runs) {
    auto found = by_id.find(run.id);
    if (found == by_id.end()) continue;  // killed before it recorded the run
    const RunRecord& r = found->second;
    const double wall = absl::ToDoubleSeconds(*r.Wall());
    const bool orphan = !r.end->exit_code && !r.end->signal;
    const double real = testing::RealSeconds(dir_, r);
    std::printf("%s: sleep %.2f s, real %.3f s, wall %.3f s, closed by %s\n", run.id.c_str(),
                run.seconds, real, wall, orphan ? "the agent" : "its launcher");
    if (!orphan) continue;  // killed after it had closed the run
    orphans++;
    EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
    EXPECT_NEAR(wall, real, 0.25 * testing::DeadlineScale())
        << run.id << " (seed " << seed << ")";
  }
  // Some die while their command sleeps (at least one); none would be a broken launch.
  EXPECT_GT(orphans, 0) << "seed " << seed;
  EXPECT_TRUE(WaitUntil([&] { return LeftBehind(parent).empty(); }, 5000))
      << LeftBehind(parent).front() << " (seed " << seed << ")\n" << agent->log();
}

// A launcher SIGKILLed while no agent runs; its command ends; the agent started later closes
// the run at once, ended at its newest point in the ledger (the last moment it was known
// alive, not when the agent came), and removes its cgroups.
TEST_F(RunsE2E, ARunLeftByADeadLauncherWhileNoAgentRanIsClosedWhenTheAgentStarts) {
  TestCgroup parent("runs-e2e-left", {"cpu", "cpuacct", "pressure"});
  const std::string config = dir_ + "/fast-samples.yaml";
  std::ofstream(config) << "memory:\n  sample_interval: 100ms\n";  // points every 0.5 s
  const std::string stop = dir_ + "/stop";
  AgentProcess launcher({"--config.file", config, "run", "--stage", "swleft", "--run-id",
                         "left-1", "--ledger.path", ledger_, "--cgroup.parent", parent.path(),
                         "--", "sh", "-c", "while [ ! -e " + stop + " ]; do sleep 0.05; done"});
  auto points = [&] {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
    absl::StatusOr<std::vector<RunSample>> p =
        ledger.ok() ? (*ledger)->Samples("left-1") : ledger.status();
    return p.ok() ? *p : std::vector<RunSample>{};
  };
  ASSERT_TRUE(WaitUntil([&] { return !points().empty(); }, 20000)) << launcher.log();
  ASSERT_EQ(kill(launcher.pid(), SIGKILL), 0);
  EXPECT_EQ(launcher.WaitExit(), 128 + SIGKILL);
  const absl::Time last_point = points().back().at;
  absl::SleepFor(absl::Milliseconds(300));
  std::ofstream(stop) << "";  // its command ends, a while after its launcher died
  const std::string run_dir = parent.dir() + "/stagewatch/swleft/left-1";
  ASSERT_TRUE(WaitUntil([&] { return testing::ReadFile(run_dir + "/cgroup.procs").empty(); },
                        10000));
  absl::SleepFor(absl::Milliseconds(500));

  auto agent = StartAgent();
  std::optional<RunRecord> closed = RunWhen(parent.path() + "/stagewatch/swleft/left-1",
                                            [](const RunRecord& r) { return !!r.end; });
  ASSERT_TRUE(closed) << agent->log();
  EXPECT_EQ(closed->end->closed_by, RunCloser::kAgent);
  EXPECT_EQ(absl::ToUnixMillis(closed->end->end), absl::ToUnixMillis(last_point));
  std::printf("its last point at %.3f s, its command ended at %.3f s: wall %.3f s\n",
              absl::ToDoubleSeconds(last_point - closed->start.start),
              absl::ToDoubleSeconds(*Modified(stop) - closed->start.start),
              absl::ToDoubleSeconds(*closed->Wall()));
  EXPECT_LT(closed->end->end, *Modified(stop)) << "never later than its command ended";
  EXPECT_TRUE(closed->end->facts.memory_peak_bytes) << "read from its leftover cgroup";
  EXPECT_TRUE(LeftBehind(parent).empty()) << LeftBehind(parent).front();
}

}  // namespace
}  // namespace stagewatch
