#include "runs/verdict.h"

#include <signal.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::At;
using testing::Started;

// A run of `wall_seconds` that an agent watched and that nothing disturbed.
RunRecord Watched(double wall_seconds) {
  RunRecord r;
  r.start = Started("r", "validate", At(0));
  RunEnd end;
  end.end = At(0) + absl::Seconds(wall_seconds);
  end.exit_code = 0;
  end.facts.oom_kills_kernel = 0;
  end.facts.memory_limit_bytes = 200 << 20;
  end.facts.memory_peak_bytes = 100 << 20;
  end.facts.cpu_seconds = wall_seconds;
  end.facts.cpu_throttled_seconds = 0;
  end.facts.cpu_pressure_seconds = 0;
  end.facts.memory_pressure_seconds = 0;
  end.facts.near_limit_seconds = 0;
  r.end = end;
  r.agent_observed = true;
  r.agent.oom_kills_userspace = 0;
  r.agent.reclaim_stall_seconds = 0;
  r.agent.run_queue_wait_seconds = 0;
  r.agent.preemptors_observed = true;
  r.agent.anomalies_observed = true;
  return r;
}

std::vector<std::string> Causes(const Verdict& v) {
  std::vector<std::string> out;
  for (const VerdictReason& r : v.reasons) out.push_back(r.cause);
  return out;
}

TEST(VerdictTest, AnUndisturbedWatchedRunIsClean) {
  const Verdict v = JudgeRun(Watched(100), RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kClean);
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_THAT(v.Summary(), HasSubstr("clean: no OOM kill"));
  EXPECT_THAT(v.Summary(), HasSubstr("5%"));
}

TEST(VerdictTest, AnOpenRunIsRunning) {
  RunRecord r = Watched(10);
  r.end.reset();
  EXPECT_EQ(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kRunning);
}

TEST(VerdictTest, WithoutAnAgentACleanLookingRunIsUnobservedAndSaysWhatIsUnknown) {
  RunRecord r = Watched(100);
  r.agent = AgentFacts{};
  r.agent_observed = false;
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kUnobserved);
  EXPECT_THAT(v.unobserved, ElementsAre("run_queue_wait_seconds", "reclaim_stall_seconds",
                                        "oom_kills_userspace", "preemptors", "anomalies"));
  EXPECT_THAT(v.Summary(), HasSubstr("no agent watched it"));
}

TEST(VerdictTest, AKernelOomKillInterruptsAndNamesTheLimitAndPeak) {
  RunRecord r = Watched(20);
  r.end->facts.oom_kills_kernel = 1;
  r.end->facts.memory_peak_bytes = 200 << 20;
  r.end->exit_code.reset();
  r.end->signal = SIGKILL;
  r.agent = AgentFacts{};  // interrupted needs no agent
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kInterrupted);
  EXPECT_THAT(Causes(v), ElementsAre("oom_kill")) << "the SIGKILL is the OOM kill, not a second cause";
  EXPECT_THAT(v.Summary(), HasSubstr("1 OOM kill at its 200.0 MiB memory limit, peak 200.0 MiB"));
}

TEST(VerdictTest, AUserSpaceOomKillInterruptsAndNamesTheKiller) {
  RunRecord r = Watched(20);
  r.agent.oom_kills_userspace = 1;
  r.agent.oom_victims = {{7, "python3", "userspace", "earlyoom"}};
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kInterrupted);
  EXPECT_THAT(v.Summary(), HasSubstr("user-space OOM killer by earlyoom"));
}

TEST(VerdictTest, OnlyASignalNotSentThroughTheLauncherInterrupts) {
  RunRecord r = Watched(20);
  r.end->exit_code.reset();
  r.end->signal = SIGSEGV;
  const Verdict crashed = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(crashed.kind, VerdictKind::kInterrupted);
  EXPECT_THAT(crashed.Summary(), HasSubstr("SIGSEGV, which was not sent through the launcher"));
  r.end->signal = SIGTERM;
  r.end->signal_requested = true;
  EXPECT_EQ(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kClean);
}

TEST(VerdictTest, EachCauseDegradesAtItsShareOfWallTimeAndNamesIt) {
  struct Case {
    const char* cause;
    void (*set)(RunRecord&, double);
    const char* words;
  };
  const Case cases[] = {
      {"cpu_throttling", [](RunRecord& r, double s) { r.end->facts.cpu_throttled_seconds = s; }, "CPU throttled"},
      {"cpu_pressure", [](RunRecord& r, double s) { r.end->facts.cpu_pressure_seconds = s; }, "stalled on CPU"},
      {"memory_pressure", [](RunRecord& r, double s) { r.end->facts.memory_pressure_seconds = s; }, "stalled on memory"},
      {"reclaim_stalls", [](RunRecord& r, double s) { r.agent.reclaim_stall_seconds = s; }, "memory reclaim"},
      {"near_memory_limit", [](RunRecord& r, double s) { r.end->facts.near_limit_seconds = s; }, "near its memory limit"},
  };
  for (const Case& c : cases) {
    RunRecord below = Watched(100);
    c.set(below, 4.9);
    EXPECT_EQ(JudgeRun(below, RunsConfig{}).kind, VerdictKind::kClean) << c.cause;
    RunRecord at = Watched(100);
    c.set(at, 5.0);
    const Verdict v = JudgeRun(at, RunsConfig{});
    EXPECT_EQ(v.kind, VerdictKind::kDegraded) << c.cause;
    ASSERT_EQ(v.reasons.size(), 1u) << c.cause;
    EXPECT_EQ(v.reasons[0].cause, c.cause);
    EXPECT_DOUBLE_EQ(*v.reasons[0].share, 0.05);
    EXPECT_THAT(v.reasons[0].text, HasSubstr(c.words));
    EXPECT_THAT(v.reasons[0].text, HasSubstr("5.0 s (5% of 1m40s wall time)"));
  }
}

// cpu.stat's throttled time sums CPUs: the share of wall time comes from the wall figure, and
// without one it is never more than the wall time.
TEST(VerdictTest, ThrottlingOnSeveralCpusIsAShareOfWallTimeNotMore) {
  RunRecord r = Watched(10);
  r.end->facts.cpu_throttled_seconds = 18;  // two CPUs, throttled 90% of the time each
  r.end->facts.cpu_throttled_wall_seconds = 9;
  Verdict v = JudgeRun(r, RunsConfig{});
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_DOUBLE_EQ(*v.reasons[0].share, 0.9);
  EXPECT_THAT(v.reasons[0].text, HasSubstr("9.0 s (90% of 10.0 s wall time)"));
  r.end->facts.cpu_throttled_wall_seconds.reset();  // a ledger row from before the wall figure
  v = JudgeRun(r, RunsConfig{});
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_DOUBLE_EQ(*v.reasons[0].share, 1.0);
}

TEST(VerdictTest, RunQueueWaitCountsOnlyBeyondNormal) {
  RunsConfig config;
  config.normal_run_queue_wait_fraction = 0.05;
  RunRecord r = Watched(100);  // 100 s of CPU: 5 s of waiting is normal
  r.agent.run_queue_wait_seconds = 9.9;
  EXPECT_EQ(JudgeRun(r, config).kind, VerdictKind::kClean);
  r.agent.run_queue_wait_seconds = 10.0;
  const Verdict v = JudgeRun(r, config);
  ASSERT_EQ(v.kind, VerdictKind::kDegraded);
  EXPECT_EQ(v.reasons[0].cause, "run_queue_wait");
  EXPECT_DOUBLE_EQ(*v.reasons[0].seconds, 5.0);
}

TEST(VerdictTest, ThresholdComesFromTheConfigAndReasonsSortByShare) {
  RunsConfig config;
  config.degraded_fraction = 0.2;
  RunRecord r = Watched(10);
  r.end->facts.cpu_throttled_seconds = 3;
  r.end->facts.memory_pressure_seconds = 6;
  r.end->facts.cpu_pressure_seconds = 1;  // 10%: below this threshold
  const Verdict v = JudgeRun(r, config);
  EXPECT_EQ(v.kind, VerdictKind::kDegraded);
  EXPECT_THAT(Causes(v), ElementsAre("memory_pressure", "cpu_throttling"));
  EXPECT_THAT(v.Summary(), HasSubstr("degraded: stalled on memory (pressure) 6.0 s (60% of 10.0 s"));
}

}  // namespace
}  // namespace stagewatch
