// A running run judged against its stage's usual runs, with real launcher runs in real cgroups,
// a real agent and a real Alertmanager: three clean runs of a stage make its baseline; then
//   - a run that climbs into its memory limit within seconds (well inside the limit-ETA
//     detector's 2-minute warm-up) is paged, with the comparison, before its OOM kill;
//   - a run that takes far longer than its stage's usual runs is paged as slower than usual,
//     with its cause so far, before it ends.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::AgentProcess;
using testing::TestCgroup;

// The alert of `alertname` for `stage` in Alertmanager's own list: its description, or "".
std::string AlertDescription(httplib::Client& am, const std::string& alertname,
                             const std::string& stage) {
  httplib::Result res = am.Get("/api/v2/alerts");
  if (!res || res->status != 200) return "";
  const nlohmann::json alerts = nlohmann::json::parse(res->body, nullptr, false);
  if (!alerts.is_array()) return "";
  for (const nlohmann::json& a : alerts) {
    const nlohmann::json& l = a["labels"];
    if (l.value("alertname", "") == alertname && l.value("pipeline_stage", "") == stage) {
      return a["annotations"].value("description", "(none)");
    }
  }
  return "";
}

class RunBaselinePageE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    ASSERT_EQ(access(testing::AlertmanagerProcess::kBinary, X_OK), 0)
        << testing::AlertmanagerProcess::kBinary << " is missing: install the Debian package "
        << "prometheus-alertmanager (scripts/install-deps.sh does)";
    char tmpl[] = "/tmp/stagewatch-baseline-page-XXXXXX";
    dir_ = mkdtemp(tmpl);
    alertmanager_ = std::make_unique<testing::AlertmanagerProcess>(
        dir_, "route:\n  receiver: none\nreceivers:\n  - name: none\n");
    ASSERT_TRUE(alertmanager_->WaitReady()) << alertmanager_->log();
    config_ = dir_ + "/config.yaml";
    // Baseline runs must be clean on a busy, emulated or two-node host (as in
    // baseline_e2e_test.cc): a quick run judged degraded for its remote memory left the stage
    // without a baseline, and so without a page. The limit-ETA fit is short so the climb is
    // judged in seconds; its warm-up stays 2 minutes.
    std::ofstream(config_) << "runs:\n  degraded_fraction: 0.5\n  remote_memory_threshold: 1\n"
                           << "  ledger_path: " << dir_
                           << "/ledger.db\n"
                           << "memory:\n  sample_interval: 250ms\n"
                           << "alerting:\n  alertmanagers: [\"http://127.0.0.1:"
                           << alertmanager_->port() << "\"]\n"
                           << "anomalies:\n  limit_eta: {window: 4s, min_span: 2s, min_points: 5}\n"
                           // Named, so other stages on a shared host cannot crowd them out of
                           // discovery.max_stages.
                           << "stages:\n";
    for (const std::string& stage : {climb_stage_, slow_stage_}) {
      std::ofstream(config_, std::ios::app)
          << "  - name: " << stage << "\n    cgroup_paths: [\"/**/stagewatch/" << stage << "\"]\n";
    }
    parent_ = std::make_unique<TestCgroup>(
        "baseline-page-e2e", std::vector<std::string>{"memory", "cpu", "cpuacct", "pressure"});
    agent_ = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--config.file", config_, "--web.listen-address", "127.0.0.1:0"});
    ASSERT_TRUE(agent_->WaitListening()) << agent_->log();
  }
  void TearDown() override {
    agent_.reset();
    parent_.reset();
    alertmanager_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::vector<std::string> Launch(const std::string& stage, const std::string& id,
                                  const std::vector<std::string>& limits,
                                  const std::string& python) {
    std::vector<std::string> args = {"--config.file", config_, "run", "--stage", stage,
                                     "--run-id", id, "--cgroup.parent", parent_->path()};
    args.insert(args.end(), limits.begin(), limits.end());
    for (const char* a : {"--", "python3", "-c"}) args.push_back(a);
    args.push_back(python);
    return args;
  }
  void RunClean(const std::string& stage, const std::string& id,
                const std::vector<std::string>& limits, const std::string& python) {
    AgentProcess run(Launch(stage, id, limits, python));
    EXPECT_EQ(run.WaitExit(60000), 0) << run.log();
  }

  const std::string climb_stage_ = "swclimb" + std::to_string(getpid());
  const std::string slow_stage_ = "swslow" + std::to_string(getpid());
  std::string dir_, config_;
  std::unique_ptr<testing::AlertmanagerProcess> alertmanager_;
  std::unique_ptr<TestCgroup> parent_;
  std::unique_ptr<AgentProcess> agent_;
};

// Holds 24 MiB for 3 s: the stage's usual run.
constexpr char kUsual[] = "import time\nb = b'\\x01' * (24 << 20)\ntime.sleep(3)\n";
// Climbs 8 MiB every 250 ms (32 MiB/s) until its 160 MiB limit kills it, in about 5 s.
constexpr char kClimb[] =
    "import time\nb = []\nwhile True:\n  b.append(b'\\x01' * (8 << 20))\n  time.sleep(0.25)\n";

TEST_F(RunBaselinePageE2E, AShortClimbIsPagedBeforeItsKillWithItsStagesBaseline) {
  const std::string& stage = climb_stage_;
  const std::vector<std::string> limit = {"--memory-max", "160M"};
  for (const char* id : {"usual-1", "usual-2", "usual-3"}) RunClean(stage, id, limit, kUsual);

  std::atomic<bool> stop = false;
  std::string paged;
  std::atomic<bool> seen = false;
  std::thread watch([&] {
    httplib::Client am("127.0.0.1", alertmanager_->port());
    while (!stop && !seen) {
      std::string d = AlertDescription(am, "StagewatchMemoryLimitETAShort", stage);
      if (!d.empty()) {
        paged = d;
        seen = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  AgentProcess climb(Launch(stage, "climb", limit, kClimb));
  const int code = climb.WaitExit(60000);
  const bool paged_before_kill = seen.load();  // read as the run ended, before the OOM page
  stop = true;
  watch.join();
  EXPECT_NE(code, 0) << climb.log();
  ASSERT_TRUE(paged_before_kill) << "no limit-ETA page before the kill\n" << agent_->log();
  std::printf("early page, before the kill: %s\n", paged.c_str());
  EXPECT_THAT(paged, HasSubstr(stage + " run climb at "));
  EXPECT_THAT(paged, HasSubstr("× its usual "));
  EXPECT_THAT(paged, HasSubstr("the limit in about"));
}

TEST_F(RunBaselinePageE2E, ASlowRunIsPagedBeforeItEnds) {
  const std::string& stage = slow_stage_;
  for (const char* id : {"quick-1", "quick-2", "quick-3"}) {
    RunClean(stage, id, {}, "import time\ntime.sleep(2)\n");
  }
  const absl::Time started = absl::Now();
  AgentProcess slow(Launch(stage, "slow", {}, "import time\ntime.sleep(12)\n"));
  httplib::Client am("127.0.0.1", alertmanager_->port());
  std::string paged;
  EXPECT_TRUE(testing::WaitUntil([&] {
    paged = AlertDescription(am, "StagewatchRunSlowerThanUsual", stage);
    return !paged.empty();
  }, 10000)) << agent_->log();
  std::printf("slower-than-usual page, %.1f s into a 12 s run: %s\n",
              absl::ToDoubleSeconds(absl::Now() - started), paged.c_str());
  // Still running when the page was there.
  EXPECT_EQ(kill(slow.pid(), 0), 0);
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(slow.pid()) + "/status") &&
               testing::ReadFile("/proc/" + std::to_string(slow.pid()) + "/status")
                       .find("State:\tZ") != std::string::npos);
  EXPECT_THAT(paged, HasSubstr(stage + " run slow is at "));
  EXPECT_THAT(paged, HasSubstr("× its usual"));
  EXPECT_EQ(slow.WaitExit(30000), 0) << slow.log();
}

}  // namespace
}  // namespace stagewatch
