// A run's baseline candidates in a real SQLite ledger: its stage's clean runs with the same
// limits, started before it, newest first; and its results, recorded and read back.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using testing::At;
using testing::WatchedRun;

class LedgerBaselineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Ledger>> l = Ledger::Open(dir_.file("ledger.db"));
    ASSERT_TRUE(l.ok()) << l.status();
    ledger_ = *std::move(l);
  }
  void Record(const RunRecord& r) {
    ASSERT_TRUE(ledger_->BeginRun(r.start).ok());
    if (r.end) ASSERT_TRUE(ledger_->EndRun(r.start.id, *r.end).ok());
    if (r.agent_observed) ASSERT_TRUE(ledger_->AddAgentFacts(r.start.id, r.agent).ok());
  }
  std::vector<std::string> Ids(const RunStart& of, int n) {
    absl::StatusOr<std::vector<RunRecord>> runs = ledger_->CleanRunsBefore(of, n);
    EXPECT_TRUE(runs.ok()) << runs.status();
    std::vector<std::string> ids;
    for (const RunRecord& r : runs.value_or(std::vector<RunRecord>{})) ids.push_back(r.start.id);
    return ids;
  }

  testing::TempDir dir_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(LedgerBaselineTest, OnlyCleanRunsOfTheStageWithTheSameLimitsBeforeIt) {
  for (int i = 0; i < 5; ++i) Record(WatchedRun("clean-" + std::to_string(i), "validate", At(i * 100), 40));
  RunRecord degraded = WatchedRun("degraded", "validate", At(550), 40);
  degraded.agent.run_queue_wait_seconds = 20;
  Record(degraded);
  RunRecord other_limits = WatchedRun("other-limits", "validate", At(560), 40);
  other_limits.start.limits.memory_max_bytes = 1536u << 20;
  Record(other_limits);
  Record(WatchedRun("other-stage", "train", At(570), 40));
  RunRecord unwatched = WatchedRun("unwatched", "validate", At(580), 40);
  unwatched.agent_observed = false;
  unwatched.agent = {};
  Record(unwatched);
  RunRecord open = WatchedRun("open", "validate", At(590), 40);
  open.end.reset();
  Record(open);
  Record(WatchedRun("later", "validate", At(2000), 40));

  const RunStart now = testing::Started("now", "validate", At(1000));
  EXPECT_THAT(Ids(now, 10), ElementsAre("clean-4", "clean-3", "clean-2", "clean-1", "clean-0"));
  EXPECT_THAT(Ids(now, 2), ElementsAre("clean-4", "clean-3"));
  RunStart limited = now;
  limited.limits.memory_max_bytes = 1536u << 20;
  EXPECT_THAT(Ids(limited, 10), ElementsAre("other-limits"));
}

// A cpuset is a limit: runs pinned elsewhere, or to fewer CPUs, are no baseline for each other.
TEST_F(LedgerBaselineTest, RunsWithAnotherCpusetAreNotInTheBaseline) {
  Record(WatchedRun("free", "validate", At(0), 40));
  RunRecord pinned = WatchedRun("pinned", "validate", At(100), 40);
  pinned.start.limits.cpuset_cpus = "1";
  pinned.start.limits.cpuset_mems = "0";
  Record(pinned);
  RunRecord other_node = WatchedRun("other-node", "validate", At(200), 40);
  other_node.start.limits.cpuset_cpus = "1";
  other_node.start.limits.cpuset_mems = "1";
  Record(other_node);
  EXPECT_EQ(ledger_->Get("pinned")->value().start.limits, pinned.start.limits);

  RunStart now = testing::Started("now", "validate", At(1000));
  EXPECT_THAT(Ids(now, 10), ElementsAre("free"));
  now.limits.cpuset_cpus = "1";
  now.limits.cpuset_mems = "0";
  EXPECT_THAT(Ids(now, 10), ElementsAre("pinned"));
  now.limits.cpuset_mems.reset();
  EXPECT_TRUE(Ids(now, 10).empty());
}

TEST_F(LedgerBaselineTest, RunsJudgedWithOtherThresholdsAreJudgedAgain) {
  RunRecord r = WatchedRun("borderline", "validate", At(0), 100);
  // 12 s of wait, 5 s of it normal (5% of its CPU time): 7% lost, degraded at 5%, clean at 10%.
  r.agent.run_queue_wait_seconds = 12;
  Record(r);
  const RunStart now = testing::Started("now", "validate", At(1000));
  EXPECT_TRUE(Ids(now, 10).empty());
  RunsConfig lenient;
  lenient.degraded_fraction = 0.10;
  absl::StatusOr<std::unique_ptr<Ledger>> reader =
      Ledger::OpenForReading(dir_.file("ledger.db"), lenient);
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<std::vector<RunRecord>> runs = (*reader)->CleanRunsBefore(now, 10);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
}

TEST_F(LedgerBaselineTest, ResultsAreRecordedMergedAndReadBack) {
  Record(WatchedRun("r1", "validate", At(0), 40));
  ASSERT_TRUE(ledger_->AddResults("r1", {{"accuracy", 0.9547}, {"rows", 120000}}).ok());
  ASSERT_TRUE(ledger_->AddResults("r1", {{"accuracy", 0.96}}).ok());
  absl::StatusOr<std::optional<RunRecord>> r = ledger_->Get("r1");
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_THAT((*r)->results, ElementsAre(Pair("accuracy", 0.96), Pair("rows", 120000)));
  EXPECT_TRUE(absl::IsNotFound(ledger_->AddResults("nope", {{"a", 1}})));
}

TEST_F(LedgerBaselineTest, PipelineRunAndIoPressureRoundTrip) {
  RunRecord r = WatchedRun("r1", "validate", At(0), 40);
  r.start.pipeline = "nightly";
  r.start.pipeline_run = "2026-12-03";
  r.end->facts.io_pressure_seconds = 1.25;
  Record(r);
  absl::StatusOr<std::optional<RunRecord>> back = ledger_->Get("r1");
  ASSERT_TRUE(back.ok() && *back);
  EXPECT_EQ((*back)->start.pipeline_run, "2026-12-03");
  EXPECT_EQ((*back)->end->facts.io_pressure_seconds, 1.25);
}

}  // namespace
}  // namespace stagewatch
