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

RunRecord Watched(double wall_seconds) {
  return testing::WatchedRun("r", "validate", At(0), wall_seconds);
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

// Four tasks busy at once (400 s of CPU in 100 s): figures of wall time (throttling, pressure,
// near the limit) stay shares of the wall time; figures summed over the tasks (reclaim stalls,
// run-queue wait) become shares of the busy task time.
TEST(VerdictTest, WithSeveralTasksBusyEachCauseKeepsItsOwnDenominator) {
  struct Case {
    const char* cause;
    void (*set)(RunRecord&);
    const char* of;
    double share = 0.05;
  };
  const Case cases[] = {
      {"cpu_throttling", [](RunRecord& r) { r.end->facts.cpu_throttled_seconds = 5; },
       "5.0 s (5% of 1m40s wall time)"},
      {"cpu_pressure", [](RunRecord& r) { r.end->facts.cpu_pressure_seconds = 5; },
       "5.0 s (5% of 1m40s wall time)"},
      {"memory_pressure", [](RunRecord& r) { r.end->facts.memory_pressure_seconds = 5; },
       "5.0 s (5% of 1m40s wall time)"},
      {"near_memory_limit", [](RunRecord& r) { r.end->facts.near_limit_seconds = 5; },
       "5.0 s (5% of 1m40s wall time)"},
      {"reclaim_stalls", [](RunRecord& r) { r.agent.reclaim_stall_seconds = 20; },
       "20.0 s summed over its tasks (5% of 6m40s busy task time in 1m40s wall time)"},
      // 125 s of waiting, 20 s of it normal (5% of 400 s of CPU): 105 s of 525 s busy.
      {"run_queue_wait", [](RunRecord& r) { r.agent.run_queue_wait_seconds = 125; },
       "summed over its tasks (20% of 8m45s busy task time in 1m40s wall time)", 0.2},
  };
  for (const Case& c : cases) {
    RunRecord r = Watched(100);
    r.end->facts.cpu_seconds = 400;
    c.set(r);
    const Verdict v = JudgeRun(r, RunsConfig{});
    EXPECT_EQ(v.kind, VerdictKind::kDegraded) << c.cause << ": " << v.Summary();
    ASSERT_EQ(v.reasons.size(), 1u) << c.cause << ": " << v.Summary();
    EXPECT_EQ(v.reasons[0].cause, c.cause);
    EXPECT_NEAR(*v.reasons[0].share, c.share, 1e-9) << c.cause;
    EXPECT_THAT(v.reasons[0].text, HasSubstr(c.of)) << c.cause;
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
  RunRecord r = Watched(100);
  r.end->facts.cpu_seconds = 50;  // 2.5 s of waiting is normal; one task, busy 57.5 s at most
  r.agent.run_queue_wait_seconds = 7.4;
  EXPECT_EQ(JudgeRun(r, config).kind, VerdictKind::kClean);
  r.agent.run_queue_wait_seconds = 7.5;
  const Verdict v = JudgeRun(r, config);
  ASSERT_EQ(v.kind, VerdictKind::kDegraded);
  EXPECT_EQ(v.reasons[0].cause, "run_queue_wait");
  EXPECT_DOUBLE_EQ(*v.reasons[0].seconds, 5.0);
  EXPECT_DOUBLE_EQ(*v.reasons[0].share, 0.05);  // of wall time: one task busy at a time
  EXPECT_THAT(v.reasons[0].text, HasSubstr("5.0 s (5% of 1m40s wall time)"));
}

// A watched run of 10 s wall time held back by its CPU quota: its CPU seconds, cpu.stat's
// throttled time (summed over CPUs) and the wall time it held the run back, and the agent's
// run-queue wait with the part of it spent throttled.
struct ThrottledFigures {
  double cpu, cpu_stat, wall_held, wait, of_it;
};
RunRecord Throttled(const ThrottledFigures& t) {
  RunRecord r = Watched(10);
  r.end->facts.cpu_seconds = t.cpu;
  r.end->facts.cpu_throttled_seconds = t.cpu_stat;
  r.end->facts.cpu_throttled_wall_seconds = t.wall_held;
  r.agent.run_queue_wait_seconds = t.wait;
  r.agent.run_queue_throttled_seconds = t.of_it;
  return r;
}

// A busy loop at 0.2 CPUs on an otherwise idle machine: 8 of its 10 s it waits for its group's
// quota, which the kernel counts as run delay. That time is the throttling reason's; the
// run-queue reason sees only the 0.1 s it waited for a CPU, which is normal.
TEST(VerdictTest, AThrottledRunWithNothingElseRunningIsDegradedByThrottlingOnly) {
  RunRecord r = Throttled({.cpu = 2, .cpu_stat = 8, .wall_held = 8, .wait = 8.1, .of_it = 8});
  EXPECT_NEAR(*QueuedNotThrottledSeconds(r), 0.1, 1e-9);
  Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kDegraded);
  EXPECT_THAT(Causes(v), ElementsAre("cpu_throttling")) << v.Summary();

  // A row without the probe's split (an older kernel): cpu.stat's throttled time stands for it.
  r.agent.run_queue_throttled_seconds.reset();
  EXPECT_NEAR(*QueuedNotThrottledSeconds(r), 0.1, 1e-9);
  EXPECT_THAT(Causes(JudgeRun(r, RunsConfig{})), ElementsAre("cpu_throttling"));
  r.end->facts.cpu_throttled_seconds = 9;  // more than the wait: nothing left, never below 0
  EXPECT_DOUBLE_EQ(*QueuedNotThrottledSeconds(r), 0);
}

// The same loop queued behind a CPU hog as well: of its 9 s of run delay 5 s were throttled and
// 4 s were spent behind the hog once quota came. Both causes are named, each with its own time.
TEST(VerdictTest, ARunThrottledAndQueuedBehindAHogGetsBothReasons) {
  RunRecord r = Throttled({.cpu = 1, .cpu_stat = 5, .wall_held = 5, .wait = 9, .of_it = 5});
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kDegraded);
  EXPECT_THAT(Causes(v), ElementsAre("cpu_throttling", "run_queue_wait")) << v.Summary();
  EXPECT_DOUBLE_EQ(*v.reasons[1].seconds, 4 - 0.05);  // 5% of 1 s of CPU is normal
  EXPECT_THAT(v.reasons[1].text, HasSubstr("waited on the run queue beyond normal"));
}

// Three loops on two CPUs, each throttled 8 of 10 s: 24 s of throttled waits summed over the
// tasks, against 16 s of cpu.stat throttled time (one count per throttled CPU). The probe's
// split leaves all 24 s out; only the 1.2 s they waited for each other is the run queue's.
TEST(VerdictTest, SeveralThrottledTasksOnSeveralCpusLeaveOutEveryThrottledWait) {
  RunRecord r = Throttled({.cpu = 2, .cpu_stat = 16, .wall_held = 8, .wait = 25.2, .of_it = 24});
  EXPECT_NEAR(*QueuedNotThrottledSeconds(r), 1.2, 1e-9);
  EXPECT_THAT(Causes(JudgeRun(r, RunsConfig{})), ElementsAre("cpu_throttling"));
}

// Three threads over 10 s of wall time, each on a CPU half the time and waiting for one the
// other half: 15 s of waiting summed over them, which is half of their 30 s of busy task time
// (not 150% of the wall time), and the same share a single thread doing the same would show.
TEST(VerdictTest, ThreeTasksWaitingHalfTheirTimeLoseHalfNotMoreThanAllOfIt) {
  RunsConfig config;
  config.normal_run_queue_wait_fraction = 0;
  RunRecord three = Watched(10);
  three.end->facts.cpu_seconds = 15;
  three.agent.run_queue_wait_seconds = 15;
  EXPECT_DOUBLE_EQ(BusyTaskSeconds(three, 10), 30);
  const Verdict v = JudgeRun(three, config);
  ASSERT_EQ(v.kind, VerdictKind::kDegraded);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].cause, "run_queue_wait");
  EXPECT_DOUBLE_EQ(*v.reasons[0].seconds, 15);
  EXPECT_DOUBLE_EQ(*v.reasons[0].share, 0.5);
  EXPECT_THAT(v.reasons[0].text,
              HasSubstr("15.0 s summed over its tasks (50% of 30.0 s busy task time in 10.0 s "
                        "wall time)"));

  RunRecord one = Watched(10);
  one.end->facts.cpu_seconds = 5;
  one.agent.run_queue_wait_seconds = 5;
  EXPECT_DOUBLE_EQ(*JudgeRun(one, config).reasons[0].share, 0.5);
}

// Three threads each in direct reclaim for 8 of their 10 s on a CPU: 24 s of stalls summed
// over them is 80% of their busy time, and every share stays within [0, 1] however the
// task-summed figures are set.
TEST(VerdictTest, ThreeTasksInReclaimKeepEveryShareWithinWallTime) {
  RunRecord r = Watched(10);
  r.end->facts.cpu_seconds = 30;
  r.agent.reclaim_stall_seconds = 24;
  Verdict v = JudgeRun(r, RunsConfig{});
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].cause, "reclaim_stalls");
  EXPECT_DOUBLE_EQ(*v.reasons[0].share, 0.8);

  r.end->facts.cpu_seconds.reset();  // no CPU figure: the stalls alone bound the busy time
  r.agent.reclaim_stall_seconds = 45;
  r.agent.run_queue_wait_seconds = 30;
  r.end->facts.near_limit_seconds = 10.5;  // a sample past the ledger's end
  v = JudgeRun(r, RunsConfig{});
  ASSERT_EQ(v.reasons.size(), 3u);
  for (const VerdictReason& reason : v.reasons) {
    EXPECT_GE(*reason.share, 0) << reason.cause;
    EXPECT_LE(*reason.share, 1) << reason.cause;
  }
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
