// A run against its baseline: the baseline is the median of its stage's clean runs, and the
// excess wall time splits by cause into parts that are never negative and sum to the excess.
#include "runs/slowdown.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/baseline.h"
#include "runs/baseline_comparison.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::WatchedRun;

// A run of validate as UsualRuns' runs are, `wall_seconds` long.
RunRecord ThisRun(const std::string& id, double wall_seconds) {
  RunRecord r = WatchedRun(id, "validate", At(1000), wall_seconds);
  r.end->facts.cpu_throttled_wall_seconds = 0;
  r.end->facts.io_pressure_seconds = 0;
  return r;
}

// Three usual runs of validate: 40, 41 and 60 s (the median is 41 s), each 1 s waiting for a CPU.
std::vector<RunRecord> UsualRuns() {
  std::vector<RunRecord> runs;
  int i = 0;
  for (double wall : {40.0, 41.0, 60.0}) {
    RunRecord r = WatchedRun("usual-" + std::to_string(i), "validate", At(i * 100), wall);
    r.agent.run_queue_wait_seconds = 1;
    r.end->facts.cpu_throttled_wall_seconds = 0;
    r.end->facts.io_pressure_seconds = 0;
    runs.insert(runs.begin(), r);  // newest first
    ++i;
  }
  return runs;
}

double Sum(const Slowdown& s) { return std::accumulate(s.seconds.begin(), s.seconds.end(), 0.0); }

TEST(BaselineTest, IsTheMedianOfEachFigureAndNeedsThreeRuns) {
  std::optional<Baseline> b = BaselineOf(UsualRuns());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->median.wall_seconds, 41);
  EXPECT_EQ(b->median.cpu_seconds, 41);
  EXPECT_EQ(b->median.queued_seconds, 1);
  EXPECT_EQ(b->p90_wall_seconds, 60);
  EXPECT_EQ(b->run_ids.front(), "usual-2");
  std::vector<RunRecord> two = UsualRuns();
  two.pop_back();
  EXPECT_FALSE(BaselineOf(two));
}

TEST(SlowdownTest, ASlowerRunSplitsItsExcessByCauseAndThePartsSumToIt) {
  // 78 s: 24 s more waiting for a CPU, 6 s more in reclaim, 5 s more CPU work: 2 s unexplained.
  RunRecord run = ThisRun("slow", 78);
  run.agent.run_queue_wait_seconds = 1 + 24;
  run.agent.reclaim_stall_seconds = 6;
  run.end->facts.memory_pressure_seconds = 6;  // the reclaim stalls, nothing more
  run.end->facts.cpu_seconds = 41 + 5;
  run.agent.preemptors = {{"train", 12400}, {"ingest", 3}};
  const Slowdown s = SlowdownOf(run, *BaselineOf(UsualRuns()));
  EXPECT_NEAR(s.ratio, 78.0 / 41, 1e-9);
  EXPECT_EQ(s.excess_seconds, 37);
  EXPECT_NEAR(s.parallelism, 1, 1e-9);  // 46 s of CPU + 25 s of wait + 6 s of reclaim < 78 s
  EXPECT_NEAR(s.Of(SlowdownCause::kCpuWait), 24, 1e-9);
  EXPECT_NEAR(s.Of(SlowdownCause::kMemoryReclaim), 6, 1e-9);
  EXPECT_NEAR(s.Of(SlowdownCause::kMemoryPressure), 0, 1e-9);  // counted once, as reclaim
  EXPECT_NEAR(s.Of(SlowdownCause::kCpuWork), 5, 1e-9);
  EXPECT_NEAR(s.Of(SlowdownCause::kUnexplained), 2, 1e-9);
  EXPECT_NEAR(Sum(s), s.excess_seconds, 1e-9);
  EXPECT_EQ(s.Text(),
            "1.90× its usual 41 s; of the 37 s extra, 24 s waiting for CPU (preempted by train "
            "12,400×, ingest 3×), 6.0 s memory reclaim, 5.0 s more CPU work, 2.0 s unexplained");
}

TEST(SlowdownTest, FiguresSummedOverTasksCountOverTheRunsParallelism) {
  // Four tasks busy at once for 50 s: 40 s more run-queue wait summed over them is 10 s of wall.
  RunRecord run = ThisRun("wide", 50);
  run.end->facts.cpu_seconds = 41 * 4;
  run.agent.run_queue_wait_seconds = 1 + 40;
  std::vector<RunRecord> usual = UsualRuns();
  for (RunRecord& r : usual) r.end->facts.cpu_seconds = 41 * 4;
  const Slowdown s = SlowdownOf(run, *BaselineOf(usual));
  EXPECT_NEAR(s.parallelism, (164.0 + 41) / 50, 1e-9);
  EXPECT_NEAR(s.Of(SlowdownCause::kCpuWait), 40 / s.parallelism, 1e-9);
  EXPECT_NEAR(Sum(s), s.excess_seconds, 1e-9);
}

TEST(SlowdownTest, ACauseThatImprovedIsZeroAndTheRestGoesToUnexplainedWithItsSign) {
  // 45 s, 4 s longer than usual: 10 s in reclaim, but 1 s less waiting than usual and as much
  // CPU work. The parts explain 10 s of a 4 s excess: unexplained is -6 s, no cause negative.
  RunRecord run = ThisRun("mixed", 45);
  run.end->facts.cpu_seconds = 41;
  run.agent.run_queue_wait_seconds = 0;
  run.agent.reclaim_stall_seconds = 10;
  run.end->facts.memory_pressure_seconds = 10;
  const Slowdown s = SlowdownOf(run, *BaselineOf(UsualRuns()));
  EXPECT_EQ(s.Of(SlowdownCause::kCpuWait), 0);
  EXPECT_EQ(s.Of(SlowdownCause::kCpuWork), 0);
  EXPECT_NEAR(s.Of(SlowdownCause::kMemoryReclaim), 10, 1e-9);
  EXPECT_NEAR(s.Of(SlowdownCause::kUnexplained), -6, 1e-9);
  for (int i = 0; i + 1 < kSlowdownCauses; ++i) EXPECT_GE(s.seconds[i], 0) << i;
  EXPECT_NEAR(Sum(s), s.excess_seconds, 1e-9);
}

TEST(SlowdownTest, AFigureNotObservedIsNamedAndExplainsNothing) {
  RunRecord run = ThisRun("noio", 50);
  run.end->facts.io_pressure_seconds.reset();
  run.agent.reclaim_stall_seconds.reset();
  const Slowdown s = SlowdownOf(run, *BaselineOf(UsualRuns()));
  EXPECT_THAT(s.unobserved, ::testing::ElementsAre("memory_reclaim", "io_pressure"));
  EXPECT_EQ(s.Of(SlowdownCause::kIoPressure), 0);
  EXPECT_NEAR(Sum(s), 9, 1e-9);  // 50 s against 41 s
}

TEST(SlowdownTest, AFasterRunSaysSoWithoutASplit) {
  const Slowdown s = SlowdownOf(ThisRun("fast", 30), *BaselineOf(UsualRuns()));
  EXPECT_LT(s.excess_seconds, 0);
  EXPECT_EQ(s.Text(), "0.73× its usual 41 s");
}

TEST(BaselineComparisonTest, TheVerdictLineCarriesTheSplitOrWhyThereIsNoBaseline) {
  RunRecord run = ThisRun("slow", 78);
  run.agent.run_queue_wait_seconds = 25;
  run.end->facts.cpu_seconds = 41;
  const Verdict v = JudgeRun(run, RunsConfig{});
  ASSERT_EQ(v.kind, VerdictKind::kDegraded);
  const BaselineComparison with = CompareWithBaseline(run, UsualRuns(), 10);
  EXPECT_THAT(VerdictWithBaseline(v, with, "validate"),
              HasSubstr("degraded: 1.90× its usual 41 s; of the 37 s extra, 24 s waiting for CPU"));
  std::vector<RunRecord> two = UsualRuns();
  two.pop_back();
  const BaselineComparison without = CompareWithBaseline(run, two, 10);
  EXPECT_FALSE(without.baseline);
  EXPECT_THAT(VerdictWithBaseline(v, without, "validate"),
              HasSubstr("; no baseline yet: 2 clean runs of validate with these limits before it, "
                        "3 needed"));
  EXPECT_EQ(without.ToJson()["baseline"], nullptr);
  EXPECT_EQ(with.ToJson()["slowdown"]["seconds_by_cause"]["cpu_wait"], 24);
}

}  // namespace
}  // namespace stagewatch
