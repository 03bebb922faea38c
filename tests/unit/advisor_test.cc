#include "runs/advisor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs/runs_report.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::At;
using testing::Started;
using testing::TempDir;

constexpr uint64_t kMiB = 1 << 20;

// Records a finished run with a known kernel peak in a real ledger.
void Record(Ledger& ledger, const std::string& id, int64_t at, uint64_t peak_bytes,
            RunLimits limits = {}, bool oom_killed = false, double p95_cores = 0.5) {
  RunStart start = Started(id, "train", At(at));
  start.limits = limits;
  ASSERT_TRUE(ledger.BeginRun(start).ok());
  RunEnd end;
  end.end = At(at + 100);
  end.facts.memory_peak_bytes = peak_bytes;
  end.facts.memory_limit_bytes = limits.memory_max_bytes;
  end.facts.oom_kills_kernel = oom_killed ? 1 : 0;
  end.facts.cpu_p95_cores = p95_cores;
  end.facts.cpu_throttled_seconds = 0;
  if (oom_killed) {
    end.signal = 9;
  } else {
    end.exit_code = 0;
  }
  ASSERT_TRUE(ledger.EndRun(id, end).ok());
}

Advice AdviseFromLedger(Ledger& ledger, const RunsConfig& config = {}) {
  absl::StatusOr<std::vector<RunRecord>> runs = ledger.List({.stage = "train"});
  EXPECT_TRUE(runs.ok()) << runs.status();
  return AdviseLimits("train", *runs, config);
}

TEST(AdvisorTest, MemoryIsTheLargestPeakPlusAMarginOfThePercentilePeak) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  // 20 runs peaking at 100..119 MiB and one outlier at 300 MiB.
  for (int i = 0; i < 20; ++i) Record(*ledger, "r" + std::to_string(i), i * 200, (100 + i) * kMiB);
  Record(*ledger, "outlier", 5000, 300 * kMiB);
  const Advice a = AdviseFromLedger(*ledger);
  ASSERT_TRUE(a.enough_runs) << a.not_enough;
  EXPECT_EQ(a.runs_counted, 21);
  EXPECT_EQ(a.largest_peak_bytes, 300 * kMiB);
  // Nearest rank: ceil(0.95 × 21) = 20th of the sorted peaks = 119 MiB.
  EXPECT_EQ(a.percentile_peak_bytes, 119 * kMiB);
  // 300 MiB + 0.15 × 119 MiB = 317.85 MiB, rounded up to 318 MiB.
  EXPECT_EQ(a.memory_max_bytes, 318 * kMiB);
  // max(119 MiB, 0.9 × 318 MiB = 286.2 MiB) → 287 MiB.
  EXPECT_EQ(a.memory_high_bytes, 287 * kMiB);
  // p95 of 0.5 CPUs × 1.15 = 0.575 → 0.6 in steps of 0.05.
  ASSERT_TRUE(a.cpu_max_cores.has_value());
  EXPECT_NEAR(*a.cpu_max_cores, 0.6, 1e-9);
  EXPECT_EQ(a.verdicts.at("unobserved"), 21);
  EXPECT_EQ(a.periods.size(), 1u);
}

TEST(AdvisorTest, AfterAnOomKillAtLimitLItRecommendsAtLeast1point2L) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  Record(*ledger, "a", 0, 150 * kMiB);
  Record(*ledger, "b", 200, 160 * kMiB);
  RunLimits tight;
  tight.memory_max_bytes = 200 * kMiB;
  Record(*ledger, "c", 400, 200 * kMiB, tight, /*oom_killed=*/true);
  const Advice a = AdviseFromLedger(*ledger);
  ASSERT_TRUE(a.enough_runs);
  EXPECT_EQ(a.oom_limit_bytes, 200 * kMiB);
  // Without the bump: 200 + 0.15 × 200 = 230 MiB. With it: 1.2 × 200 MiB = 240 MiB.
  EXPECT_EQ(a.memory_max_bytes, 240 * kMiB);
  EXPECT_THAT(a.why.front(), HasSubstr("OOM-killed at a 200.0 MiB limit"));
  EXPECT_EQ(a.verdicts.at("interrupted"), 1);
}

// A run killed by a user-space OOM killer (earlyoom, systemd-oomd) ran out of memory as surely
// as one the kernel killed: every kind of OOM kill the ledger records bumps the recommendation.
TEST(AdvisorTest, EveryKindOfOomKillAtLimitLRecommendsAtLeast1point2L) {
  struct Kill {
    const char* by;
    uint64_t kernel, userspace;
    int signal;
  };
  for (const Kill& kill : {Kill{"the kernel", 1, 0, 9}, Kill{"earlyoom", 0, 1, 9},
                           Kill{"systemd-oomd", 0, 1, 15}}) {
    SCOPED_TRACE(kill.by);
    TempDir dir;
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    Record(*ledger, "a", 0, 150 * kMiB);
    Record(*ledger, "b", 200, 160 * kMiB);
    RunStart start = Started("c", "train", At(400));
    start.limits.memory_max_bytes = 200 * kMiB;
    ASSERT_TRUE(ledger->BeginRun(start).ok());
    if (kill.userspace > 0) {
      AgentFacts facts;  // what the agent records of a user-space kill in the run's cgroup
      facts.oom_kills_userspace = kill.userspace;
      facts.oom_victims = {{4242, "python3", "userspace", kill.by}};
      ASSERT_TRUE(ledger->AddAgentFacts("c", facts).ok());
    }
    RunEnd end;
    end.end = At(500);
    end.signal = kill.signal;
    end.facts.memory_peak_bytes = 200 * kMiB;
    end.facts.memory_limit_bytes = 200 * kMiB;
    end.facts.oom_kills_kernel = kill.kernel;
    ASSERT_TRUE(ledger->EndRun("c", end).ok());

    const Advice a = AdviseFromLedger(*ledger);
    ASSERT_TRUE(a.enough_runs);
    EXPECT_EQ(a.oom_limit_bytes, 200 * kMiB);
    EXPECT_EQ(a.memory_max_bytes, 240 * kMiB);  // 1.2 × 200 MiB, not 200 + 0.15 × 200
    EXPECT_EQ(a.verdicts.at("interrupted"), 1);
    EXPECT_THAT(AdviceText(a), HasSubstr("OOM-killed at a 200.0 MiB limit, so 1.20 × that"));
    EXPECT_EQ(AdviceToJson(a)["memory_max_bytes"], 240 * kMiB);
  }
}

TEST(AdvisorTest, SaysNotEnoughRunsRatherThanGuessing) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  Record(*ledger, "a", 0, 150 * kMiB);
  Record(*ledger, "b", 200, 160 * kMiB);
  ASSERT_TRUE(ledger->BeginRun(Started("open", "train", At(400))).ok());  // not finished
  const Advice a = AdviseFromLedger(*ledger);
  EXPECT_FALSE(a.enough_runs);
  EXPECT_EQ(a.runs_counted, 2);
  EXPECT_THAT(a.not_enough, HasSubstr("not enough runs: 2 finished runs"));
  EXPECT_EQ(AdviceToJson(a)["memory_max_bytes"], nullptr);
  EXPECT_THAT(AdviceText(a), HasSubstr("not enough runs"));
}

TEST(AdvisorTest, UsesOnlyTheNewestMaxRuns) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  Record(*ledger, "old-huge", 0, 900 * kMiB);
  for (int i = 0; i < 3; ++i) Record(*ledger, "new" + std::to_string(i), 1000 + i * 200, 100 * kMiB);
  RunsConfig config;
  config.advise.max_runs = 3;
  const Advice a = AdviseFromLedger(*ledger, config);
  EXPECT_EQ(a.runs_counted, 3);
  EXPECT_EQ(a.largest_peak_bytes, 100 * kMiB);
}

TEST(AdvisorTest, ShowsWallTimeAndVerdictsBeforeAndAfterALimitChange) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  Record(*ledger, "a", 0, 150 * kMiB);
  Record(*ledger, "b", 200, 150 * kMiB);
  RunLimits tight;
  tight.memory_max_bytes = 160 * kMiB;
  Record(*ledger, "c", 400, 160 * kMiB, tight, true);
  Record(*ledger, "d", 600, 158 * kMiB, tight);
  const Advice a = AdviseFromLedger(*ledger);
  ASSERT_EQ(a.periods.size(), 2u);
  EXPECT_EQ(a.periods[0].runs, 2);
  EXPECT_FALSE(a.periods[0].limits.memory_max_bytes.has_value());
  EXPECT_EQ(a.periods[1].runs, 2);
  EXPECT_EQ(a.periods[1].limits.memory_max_bytes, 160 * kMiB);
  EXPECT_EQ(a.periods[1].verdicts.at("interrupted"), 1);
  EXPECT_DOUBLE_EQ(a.periods[1].median_wall_seconds, 100);
  EXPECT_THAT(AdviceText(a), HasSubstr("the limits changed between runs"));
  EXPECT_THAT(AdviceText(a), HasSubstr("memory-max 160.0 MiB"));
}

// Records a finished discovered run: no start limits, only the limit the kernel held at its end.
void RecordDiscovered(Ledger& ledger, const std::string& id, int64_t at, uint64_t limit_bytes) {
  RunStart start = Started(id, "train", At(at));
  start.source = RunSource::kDiscovered;
  ASSERT_TRUE(ledger.BeginRun(start).ok());
  RunEnd end;
  end.end = At(at + 100);
  end.exit_code = 0;
  end.facts.memory_peak_bytes = 150 * kMiB;
  end.facts.memory_limit_bytes = limit_bytes;
  ASSERT_TRUE(ledger.EndRun(id, end).ok());
}

TEST(AdvisorTest, ADiscoveredRunsLimitIsTheKernelsLimitAtItsEnd) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  RunLimits launched;
  launched.memory_max_bytes = 400 * kMiB;
  Record(*ledger, "a", 0, 150 * kMiB, launched);
  Record(*ledger, "b", 200, 150 * kMiB, launched);
  RecordDiscovered(*ledger, "c", 400, 400 * kMiB);
  Advice a = AdviseFromLedger(*ledger);
  ASSERT_EQ(a.periods.size(), 1u);
  EXPECT_EQ(a.periods[0].runs, 3);
  EXPECT_EQ(a.periods[0].limits.memory_max_bytes, 400 * kMiB);
  EXPECT_THAT(AdviceText(a), Not(HasSubstr("the limits changed between runs")));

  RecordDiscovered(*ledger, "d", 600, 200 * kMiB);
  a = AdviseFromLedger(*ledger);
  ASSERT_EQ(a.periods.size(), 2u);
  EXPECT_EQ(a.periods[0].runs, 3);
  EXPECT_EQ(a.periods[1].runs, 1);
  EXPECT_EQ(a.periods[1].limits.memory_max_bytes, 200 * kMiB);
  EXPECT_THAT(AdviceText(a), HasSubstr("memory-max 200.0 MiB"));
}

TEST(AdvisorTest, AThrottledRunBumpsTheCpuLimit) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  RunLimits cpu;
  cpu.cpu_max_cores = 0.5;
  for (int i = 0; i < 3; ++i) {
    const std::string id = "t" + std::to_string(i);
    RunStart start = Started(id, "train", At(i * 200));
    start.limits = cpu;
    ASSERT_TRUE(ledger->BeginRun(start).ok());
    RunEnd end;
    end.end = At(i * 200 + 100);
    end.exit_code = 0;
    end.facts.memory_peak_bytes = 10 * kMiB;
    end.facts.cpu_p95_cores = 0.5;
    end.facts.cpu_throttled_seconds = 40;  // 40% of its wall time
    ASSERT_TRUE(ledger->EndRun(id, end).ok());
  }
  const Advice a = AdviseFromLedger(*ledger);
  EXPECT_EQ(a.throttled_at_cores, 0.5);
  EXPECT_NEAR(*a.cpu_max_cores, 0.6, 1e-9);  // 1.2 × 0.5, above 0.5 × 1.15
}

// A discovered run (a Slurm job's cgroup) whose limits the agent read from its files at its end.
void RecordDiscovered(Ledger& ledger, const std::string& id, int64_t at, RunLimits kernel,
                      double throttled_seconds) {
  RunStart start = Started(id, "train", At(at));
  start.source = RunSource::kDiscovered;
  start.command = {};
  ASSERT_TRUE(ledger.BeginRun(start).ok());
  RunEnd end;
  end.end = At(at + 100);
  end.closed_by = RunCloser::kAgent;
  end.facts.memory_peak_bytes = 10 * kMiB;
  end.facts.memory_limit_bytes = kernel.memory_max_bytes;
  end.facts.limits = kernel;
  end.facts.cpu_p95_cores = kernel.cpu_max_cores.value_or(1);
  end.facts.cpu_throttled_seconds = throttled_seconds;
  ASSERT_TRUE(ledger.EndRun(id, end).ok());
}

TEST(AdvisorTest, DiscoveredRunsAtACpuLimitGiveCpuEvidenceAndPeriodsByEveryLimit) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  RunLimits before{.memory_max_bytes = 64 * kMiB, .memory_high_bytes = 32 * kMiB,
                   .cpu_max_cores = 0.25};
  RunLimits after = before;
  after.memory_high_bytes = 48 * kMiB;  // only the soft limit and the quota change
  after.cpu_max_cores = 0.5;
  after.cpu_weight = 200;
  for (int i = 0; i < 3; ++i) RecordDiscovered(*ledger, "d" + std::to_string(i), i * 200, before, 30);
  for (int i = 3; i < 5; ++i) RecordDiscovered(*ledger, "d" + std::to_string(i), i * 200, after, 0);

  // The row holds the kernel's limits as the run's limits.
  std::optional<RunRecord> row = *ledger->Get("d0");
  ASSERT_TRUE(row);
  EXPECT_EQ(row->start.limits, before);

  const Advice a = AdviseFromLedger(*ledger);
  ASSERT_TRUE(a.enough_runs) << a.not_enough;
  EXPECT_EQ(a.throttled_at_cores, 0.25);  // 30 s of 100 s throttled at 0.25 CPUs
  ASSERT_EQ(a.periods.size(), 2u);
  EXPECT_EQ(a.periods[0].limits, before);
  EXPECT_EQ(a.periods[0].runs, 3);
  EXPECT_EQ(a.periods[1].limits, after);
  EXPECT_EQ(a.periods[1].runs, 2);
  EXPECT_THAT(AdviceText(a), HasSubstr("memory-high 48.0 MiB, cpu-max 0.5, cpu-weight 200"));
}

TEST(AdvisorTest, ALauncherRunKeepsTheLimitsItAskedFor) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  RunStart start = Started("l1", "train", At(0));
  start.limits.memory_max_bytes = 200 * kMiB;
  ASSERT_TRUE(ledger->BeginRun(start).ok());
  RunEnd end;
  end.end = At(10);
  end.exit_code = 0;
  end.facts.memory_limit_bytes = 200 * kMiB;
  end.facts.limits = RunLimits{.memory_max_bytes = 1, .cpu_max_cores = 3};
  ASSERT_TRUE(ledger->EndRun("l1", end).ok());
  EXPECT_EQ((*ledger->Get("l1"))->start.limits, start.limits);
}

}  // namespace
}  // namespace stagewatch
