// A limit on a run's cgroup beneath an unlimited stage top, as launchers, Slurm and
// Kubernetes set it: the run's OOM kills reach the stage exactly, with its memory events,
// checked against the run cgroup's own files (v1 or pure v2). The run's limit itself is not
// exported yet: the memory collector reads stage tops only (docs/architecture.md, "Limit domains").
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;

constexpr uint64_t kLimit = 24 << 20;
constexpr int kKills = 2;

TEST(RunCgroupE2E, OomKillsInALimitedRunBeneathAnUnlimitedStageTopAreCountedWithTheRunsLimit) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup run("stagewatch/train/run-1");
  run.SetMemoryLimit(kLimit);
  const std::string top = run.dir().substr(0, run.dir().rfind('/'));
  const std::string top_limit =
      testing::ReadFile(top + (run.v2() ? "/memory.max" : "/memory.limit_in_bytes"));
  ASSERT_TRUE(run.v2() ? top_limit == "max\n" : std::stoull(top_limit) >= (uint64_t{1} << 62))
      << "the stage top must be unlimited, it says " << top_limit;

  char config[] = "/tmp/stagewatch-run-e2e-XXXXXX";
  close(mkstemp(config));
  testing::WriteFile(config, "memory:\n  sample_interval: 100ms\n");
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  const std::string kills = R"(stagewatch_oom_kills_total{pipeline_stage="train",kind="kernel"})";
  const std::string cgroup_kills = R"(stagewatch_oom_kills_cgroup_total{pipeline_stage="train"})";
  for (int i = 0; i < kKills; i++) {
    pid_t hog = run.Spawn("sw-run-hog", testing::HogMemoryForever);
    ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);
  }
  ASSERT_EQ(run.OomKillCount(), static_cast<uint64_t>(kKills));

  // The kernel's view of the run, read after the kills: the agent must show the same.
  const std::string events = run.dir() + "/memory.events";
  const std::string ev = R"(stagewatch_memory_events_total{pipeline_stage="train",event=")";
  std::map<std::string, double> want = {{ev + R"(oom_kill"})", kKills}};
  if (run.v2()) {
    for (const char* key : {"max", "oom"}) want[ev + key + R"("})"] = testing::KeyedValue(events, key);
  } else {
    want[ev + R"(failcnt"})"] = std::stoull(testing::ReadFile(run.dir() + "/memory.failcnt"));
  }
  testing::Scrape m;
  const bool settled = testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        for (const auto& [series, value] : want) {
          if (ValueOr(m, series, -1) != value) return false;
        }
        // The victim's own count is read a moment after its kill is traced.
        return ValueOr(m, kills, -1) == kKills && ValueOr(m, cgroup_kills, -1) == kKills;
      },
      5000);
  for (const auto& [series, value] : want) {
    std::printf("%s: agent %.0f, kernel %.0f\n", series.c_str(), ValueOr(m, series, -1), value);
    EXPECT_EQ(ValueOr(m, series, -1), value) << series;
  }
  EXPECT_TRUE(settled) << agent.log();
  EXPECT_EQ(ValueOr(m, kills, -1), kKills);
  EXPECT_EQ(ValueOr(m, cgroup_kills, -1), kKills);
  EXPECT_EQ(ValueOr(m, R"(stagewatch_oom_kills_mismatch{pipeline_stage="train"})", -1), 0);
  unlink(config);
}

}  // namespace
}  // namespace stagewatch
