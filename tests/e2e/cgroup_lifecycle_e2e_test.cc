// Cgroups as the kernel makes and removes them, end to end through the built binary: kills in
// cgroups made a moment before, processes of cgroups that live for one short command, stages
// that come and go, and the walk fallback. Ground truth is the kernel's own counters.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cgroup/memcg_counters.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::Scrape;
using testing::TestCgroup;
using testing::ValueOr;

// Each test discovers stages under a directory name of its own, so that stages other tests
// on the host discover at the same time cannot take its slots.
constexpr const char* kDiscoveryDir = "sw-lifecycle-e2e";

// Cgroups made directly beneath a TestCgroup (so within the test's own cgroup), each with the
// processes this test starts in it; all removed at once by Remove(), or on destruction.
class ChildCgroups {
 public:
  explicit ChildCgroups(const TestCgroup* parent) : parent_(parent) {
    // On cgroup v2 a child has memory.max only where its parent hands the controller down;
    // the parent holds no process, as the no-internal-processes rule wants.
    if (parent->v2()) {
      testing::WriteFile(parent->dir() + "/cgroup.subtree_control", "+memory +cpu +pids");
    }
  }
  ~ChildCgroups() { Remove(); }

  // Makes <parent>/<name> and returns its directory.
  std::string Make(const std::string& name) {
    const std::string dir = parent_->dir() + "/" + name;
    EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
    dirs_.push_back(dir);
    return dir;
  }

  // Forks a child that joins `dir` and runs `body`.
  pid_t Spawn(const std::string& dir, const std::function<void()>& body) {
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(120);
      close(fd);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      body();
      _exit(0);
    }
    running_.push_back(pid);
    return pid;
  }

  int Wait(pid_t pid) {
    std::erase(running_, pid);
    return testing::WaitForChild(pid);
  }

  void Remove() {
    for (pid_t pid : running_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    running_.clear();
    for (const std::string& dir : dirs_) {
      if (rmdir(dir.c_str()) != 0) ADD_FAILURE() << "rmdir " << dir << ": " << strerror(errno);
    }
    dirs_.clear();
  }

 private:
  const TestCgroup* parent_;
  std::vector<std::string> dirs_;
  std::vector<pid_t> running_;
};

// Scrapes, and checks that no counter of the stages in `watched` ever went down.
class Scraper {
 public:
  Scraper(AgentProcess* agent, std::vector<std::string> watched)
      : agent_(agent), watched_(std::move(watched)) {}

  Scrape Get() {
    Scrape s = ParseExposition(agent_->Get("/metrics").value_or(""));
    for (const auto& [series, value] : s) {
      if (!IsCounter(series) || !Watched(series)) continue;
      auto [it, inserted] = last_.try_emplace(series, value);
      if (!inserted) {
        EXPECT_GE(value, it->second) << series << " went backwards";
        it->second = value;
      }
    }
    return s;
  }
  double Value(const std::string& series) { return ValueOr(Get(), series, -1); }

  size_t counters_watched() const { return last_.size(); }

 private:
  static bool IsCounter(const std::string& series) {
    const std::string name = series.substr(0, series.find('{'));
    return name.ends_with("_total") || name.ends_with("_bucket") || name.ends_with("_count");
  }
  bool Watched(const std::string& series) const {
    for (const std::string& stage : watched_) {
      if (series.find("pipeline_stage=\"" + stage + "\"") != std::string::npos) return true;
    }
    return false;
  }

  AgentProcess* agent_;
  std::vector<std::string> watched_;
  std::map<std::string, double> last_;
};

std::string Kills(const std::string& stage) {
  return absl::StrCat("stagewatch_oom_kills_total{pipeline_stage=\"", stage, "\",kind=\"kernel\"}");
}
std::string Mismatch(const std::string& stage) {
  return absl::StrCat("stagewatch_oom_kills_mismatch{pipeline_stage=\"", stage, "\"}");
}

// Kills, each in a cgroup made the moment before its job starts; returns the kernel's count.
uint64_t KillInFreshCgroups(ChildCgroups* jobs, const TestCgroup& parent, int n) {
  uint64_t kernel = 0;
  for (int i = 0; i < n; i++) {
    const std::string dir = jobs->Make(absl::StrCat("job_", i));
    testing::WriteFile(dir + (parent.layout().key == CGROUP_KEY_V1_MEMORY
                                  ? "/memory.limit_in_bytes"
                                  : "/memory.max"),
                       std::to_string(16 << 20));
    if (::testing::Test::HasFatalFailure()) return kernel;  // no hog without its limit
    pid_t hog = jobs->Spawn(dir, testing::HogMemoryForever);
    EXPECT_EQ(jobs->Wait(hog), SIGKILL);
    kernel += ReadOomKillCount(dir, parent.layout().key).value_or(0);
  }
  return kernel;
}

// A stage whose counters must only grow while the others come and go.
pid_t StartSteadyStage(TestCgroup* steady) {
  return steady->Spawn("sw-steady", [] {
    for (;;) usleep(2000);
  });
}

void CheckAttributesKillsInFreshCgroups(const std::string& extra_config, int kills,
                                        const std::string& stage) {
  TestCgroup parent(absl::StrCat(kDiscoveryDir, "/", stage));
  TestCgroup steady(absl::StrCat(kDiscoveryDir, "/steady_", stage));
  StartSteadyStage(&steady);
  const std::string config =
      testing::WriteTempConfig(absl::StrCat(extra_config, "discovery:\n  directory: ", kDiscoveryDir, "\n"));
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  Scraper scraper(&agent, {"steady_" + stage, stage});
  const double unattributed_before = scraper.Value(Kills("unattributed"));

  ChildCgroups jobs(&parent);
  const uint64_t kernel = KillInFreshCgroups(&jobs, parent, kills);
  EXPECT_EQ(kernel, static_cast<uint64_t>(kills));
  EXPECT_TRUE(testing::WaitUntil([&] { return scraper.Value(Kills(stage)) == kills; }, 10000))
      << scraper.Value(Kills(stage)) << " of " << kills << "\n" << agent.log();
  Scrape before = scraper.Get();
  EXPECT_EQ(ValueOr(before, Kills(stage), -1), kills);
  EXPECT_EQ(ValueOr(before, Mismatch(stage), -99), 0);
  EXPECT_EQ(ValueOr(before, Kills("unattributed"), -1), unattributed_before);

  jobs.Remove();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // rmdir seen, folded, deleted
  Scrape after = scraper.Get();
  EXPECT_EQ(ValueOr(after, Kills(stage), -1), kills);
  EXPECT_EQ(ValueOr(after, Mismatch(stage), -99), 0);
  EXPECT_GT(scraper.counters_watched(), 0u);
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
  unlink(config.c_str());
}

TEST(CgroupLifecycleE2E, EveryKillInACgroupMadeJustBeforeIsCredited) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  CheckAttributesKillsInFreshCgroups("", 40, "oomburst");
}

TEST(CgroupLifecycleE2E, WalkFallbackStillCreditsKillsAndFeaturesSaysSo) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string yaml = "cgroup:\n  lifecycle_events: false\n";
  const std::string config = testing::WriteTempConfig(yaml);
  auto [rc, report] = testing::RunWithInput(
      absl::StrCat(STAGEWATCH_BINARY, " --config.file ", config, " features 2>&1"), "");
  EXPECT_NE(report.find("cgroup naming walks"), std::string::npos) << report;
  EXPECT_NE(report.find("cgroup.lifecycle_events: false"), std::string::npos) << report;
  auto [rc_default, report_default] =
      testing::RunWithInput(absl::StrCat(STAGEWATCH_BINARY, " features 2>&1"), "");
  EXPECT_NE(report_default.find("cgroup naming lifecycle_events"), std::string::npos)
      << report_default;
  unlink(config.c_str());
  (void)rc;
  (void)rc_default;

  CheckAttributesKillsInFreshCgroups(yaml, 10, "walked");
}

TEST(CgroupLifecycleE2E, ExitsOfCgroupsThatLiveForOneCommandReachTheirStage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr int kCgroups = 300;
  TestCgroup parent(absl::StrCat(kDiscoveryDir, "/oneshot"));
  const std::string config =
      testing::WriteTempConfig(absl::StrCat("discovery:\n  directory: ", kDiscoveryDir, "\n"));
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  Scraper scraper(&agent, {"oneshot"});
  const std::string exits = R"(stagewatch_processes_exited_total{pipeline_stage="oneshot"})";

  ChildCgroups jobs(&parent);
  for (int i = 0; i < kCgroups; i++) {
    pid_t child = jobs.Spawn(jobs.Make(absl::StrCat("run_", i)), [] {
      execl("/bin/true", "true", nullptr);
      _exit(127);
    });
    ASSERT_EQ(jobs.Wait(child), 0);
  }
  jobs.Remove();  // all at once, before the agent could have walked to any of them

  double credited = 0;
  testing::WaitUntil([&] { return (credited = scraper.Value(exits)) >= kCgroups; }, 10000);
  std::printf("exits credited: %.0f of %d\n", credited, kCgroups);
  EXPECT_GE(credited, 0.99 * kCgroups) << agent.log();
  EXPECT_LE(credited, kCgroups);
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
  unlink(config.c_str());
}

TEST(CgroupLifecycleE2E, StagesThatAreGoneAreForgottenAndFreeTheirSlots) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr int kStages = 33;  // one past discovery.max_stages
  const std::string config =
      testing::WriteTempConfig(absl::StrCat("discovery:\n  directory: ", kDiscoveryDir,
                               "\n  max_stages: 32\n  forget_after: 5s\n"
                               "stages:\n  - name: steady\n"
                               "    cgroup_paths: [\"/**/steady_stage\"]\n"));
  TestCgroup steady("steady_stage");
  StartSteadyStage(&steady);
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  std::vector<std::string> names;
  for (int i = 0; i < kStages; i++) names.push_back(absl::StrCat("gone", i));
  std::vector<std::string> watched = names;
  watched.push_back("steady");
  Scraper scraper(&agent, watched);

  {
    TestCgroup discovery_dir(absl::StrCat("comeandgo/", kDiscoveryDir));
    ChildCgroups stages(&discovery_dir);
    for (const std::string& name : names) {
      pid_t child = stages.Spawn(stages.Make(name), [] { usleep(300000); });
      (void)child;
    }
    auto labelled = [&] {
      const Scrape s = scraper.Get();
      int n = 0;
      for (const std::string& name : names) {
        n += s.contains(absl::StrCat(
            "stagewatch_processes_exited_total{pipeline_stage=\"", name, "\"}"));
      }
      return n;
    };
    EXPECT_TRUE(testing::WaitUntil([&] { return labelled() == 32; }, 5000)) << labelled();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the processes end
    stages.Remove();
  }
  const std::string log = agent.log();
  EXPECT_NE(log.find("discovery.max_stages reached"), std::string::npos) << log;
  EXPECT_NE(log.find("refused_stage="), std::string::npos) << log;

  // forget_after is 5 s; forgetting is checked every second.
  const auto gone = std::chrono::steady_clock::now();
  auto remaining = [&] {
    int series = 0;
    for (const auto& [s, v] : scraper.Get()) {
      series += s.find("pipeline_stage=\"gone") != std::string::npos;
    }
    return series;
  };
  EXPECT_TRUE(testing::WaitUntil([&] { return remaining() == 0; }, 8000)) << remaining();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - gone).count();
  std::printf("stages forgotten after %.1f s\n", seconds);
  EXPECT_GE(seconds, 4.0);  // not before forget_after
  EXPECT_NE(agent.log().find("forgot discovered stage"), std::string::npos);

  // A stage after them gets a label of its own, counted from zero.
  TestCgroup fresh(absl::StrCat("comeandgo/", kDiscoveryDir, "/fresh"));
  pid_t child = fresh.Spawn("sw-fresh", [] {});
  ASSERT_EQ(testing::WaitForChild(child), 0);
  const std::string exits = R"(stagewatch_processes_exited_total{pipeline_stage="fresh"})";
  EXPECT_TRUE(testing::WaitUntil([&] { return scraper.Value(exits) == 1; }, 5000))
      << scraper.Value(exits) << "\n" << agent.log();
  EXPECT_GT(scraper.Value(R"(stagewatch_context_switches_total{pipeline_stage="steady",ctxswitchtype="voluntary"})"), 0);
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
  unlink(config.c_str());
}

// Many runs' cgroups removed at once: every run is closed in the ledger, and every stage leaves
// /metrics (its runs' series too) within discovery.forget_after and 10 s. A run's end used to
// read the probes' maps whole for each cgroup, and the runs' series of a forgotten stage stayed.
TEST(CgroupLifecycleE2E, ManyRunsRemovedAtOnceAreClosedAndTheirStagesForgotten) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr int kStages = 20, kRunsPerStage = 10;
  char dir_template[] = "/tmp/sw-mass-removal-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string ledger_path = absl::StrCat(dir_template, "/ledger.db");
  const std::string config = testing::WriteTempConfig(absl::StrCat(
      "discovery:\n  directory: ", kDiscoveryDir, "\n  max_stages: 32\n  forget_after: 2s\n"));
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0",
                      "--ledger.path", ledger_path});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  auto runs = [&](bool open_only) -> int {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path);
    if (!ledger.ok()) return -1;
    absl::StatusOr<std::vector<RunRecord>> list =
        (*ledger)->List({.open_only = open_only, .limit = 1 << 20});
    return list.ok() ? static_cast<int>(list->size()) : -1;
  };
  auto series_of_stages = [&] {
    int n = 0;
    for (const auto& [series, value] : ParseExposition(agent.Get("/metrics").value_or(""))) {
      n += series.find("pipeline_stage=\"mass") != std::string::npos;
    }
    return n;
  };
  {
    std::vector<std::unique_ptr<TestCgroup>> stages;
    std::vector<std::unique_ptr<ChildCgroups>> run_cgroups;
    for (int s = 0; s < kStages; s++) {
      stages.push_back(
          std::make_unique<TestCgroup>(absl::StrCat("mass/", kDiscoveryDir, "/mass", s)));
      run_cgroups.push_back(std::make_unique<ChildCgroups>(stages.back().get()));
      for (int r = 0; r < kRunsPerStage; r++) {
        run_cgroups.back()->Spawn(run_cgroups.back()->Make(absl::StrCat("run", r)),
                                  [] { pause(); });
      }
    }
    EXPECT_TRUE(testing::WaitUntil([&] { return runs(true) == kStages * kRunsPerStage; }, 10000))
        << runs(true) << "\n" << agent.log();
    EXPECT_TRUE(testing::WaitUntil([&] { return series_of_stages() > 0; }, 5000));
    for (auto& c : run_cgroups) c->Remove();  // every task killed, then every run's cgroup
    run_cgroups.clear();
    stages.clear();  // and the stages' own
  }
  const auto removed = std::chrono::steady_clock::now();
  EXPECT_TRUE(testing::WaitUntil([&] { return runs(true) == 0; }, 12000))
      << runs(true) << " runs still open\n" << agent.log();
  EXPECT_EQ(runs(false), kStages * kRunsPerStage);
  EXPECT_TRUE(testing::WaitUntil([&] { return series_of_stages() == 0; }, 12000))
      << series_of_stages() << " series of removed stages";
  std::printf("runs closed and stages forgotten %.1f s after the removal\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - removed).count());
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
  unlink(config.c_str());
  std::filesystem::remove_all(dir_template);
}

}  // namespace
}  // namespace stagewatch
