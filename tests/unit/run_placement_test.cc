// A run's placement in the ledger: its migrations and CPU time by node (the agent's, merged
// from each of its writes), its memory by node (the end's), the remote share they give, and
// how `runs show` prints them. Real SQLite, two-node figures made here.
#include <sqlite3.h>

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs/ledger_schema.h"
#include "runs/run_placement.h"
#include "runs/runs_report.h"
#include "runs/verdict.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::At;
using testing::Started;
using testing::TempDir;

constexpr uint64_t kMiB = 1 << 20;

std::unique_ptr<Ledger> OpenOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  EXPECT_TRUE(ledger.ok()) << ledger.status();
  return ledger.ok() ? *std::move(ledger) : nullptr;
}

// Ran 8 s on node 0 and 2 s on node 1; 36 MiB on node 0, 64 MiB on node 1.
RunRecord TwoNodeRun(Ledger& ledger, const std::string& id) {
  EXPECT_TRUE(ledger.BeginRun(Started(id, "validate", At(0))).ok());
  AgentFacts first;
  first.node_migrations = 100;
  first.cross_node_migrations = 3;
  first.cpu_seconds_by_node = {{0, 6}, {1, 2}};
  EXPECT_TRUE(ledger.AddAgentFacts(id, first).ok());
  AgentFacts second;  // a second write, as for a run the agent watched across a restart
  second.node_migrations = 20;
  second.cross_node_migrations = 1;
  second.cpu_seconds_by_node = {{0, 2}};
  EXPECT_TRUE(ledger.AddAgentFacts(id, second).ok());
  RunEnd end;
  end.end = At(20);
  end.exit_code = 0;
  end.facts.cpu_seconds = 10;
  end.facts.memory_by_node = {{0, {32 * kMiB, 4 * kMiB}}, {1, {60 * kMiB, 4 * kMiB}}};
  EXPECT_TRUE(ledger.EndRun(id, end).ok());
  absl::StatusOr<std::optional<RunRecord>> r = ledger.Get(id);
  EXPECT_TRUE(r.ok() && *r);
  return r.ok() && *r ? **r : RunRecord{};
}

TEST(RunPlacementTest, TheLedgerKeepsMigrationsCpuTimeAndMemoryByNode) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  const RunRecord r = TwoNodeRun(*ledger, "r1");
  EXPECT_EQ(r.agent.node_migrations, 120u);
  EXPECT_EQ(r.agent.cross_node_migrations, 4u);
  EXPECT_THAT(r.agent.cpu_seconds_by_node, ElementsAre(Pair(0, 8.0), Pair(1, 2.0)));
  ASSERT_TRUE(r.end);
  ASSERT_EQ(r.end->facts.memory_by_node.size(), 2u);
  EXPECT_EQ(r.end->facts.memory_by_node.at(0).anon_bytes, 32 * kMiB);
  EXPECT_EQ(r.end->facts.memory_by_node.at(0).file_bytes, 4 * kMiB);
  EXPECT_EQ(r.end->facts.memory_by_node.at(1).anon_bytes, 60 * kMiB);
  // 80% of its CPU time on node 0 with 64% of its memory away from it, 20% on node 1 with 36%.
  EXPECT_THAT(RunRemoteMemoryShare(r), ::testing::Optional(DoubleNear(0.8 * 0.64 + 0.2 * 0.36,
                                                                      1e-9)));
}

TEST(RunPlacementTest, ARunWithoutThemReadsBackAsNotObserved) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("plain", "validate", At(0))).ok());
  ASSERT_TRUE(ledger->AddAgentFacts("plain", AgentFacts{}).ok());
  RunEnd end;
  end.end = At(5);
  ASSERT_TRUE(ledger->EndRun("plain", end).ok());
  const RunRecord r = **ledger->Get("plain");
  EXPECT_FALSE(r.agent.node_migrations);
  EXPECT_TRUE(r.agent.cpu_seconds_by_node.empty());
  EXPECT_TRUE(r.end->facts.memory_by_node.empty());
  EXPECT_FALSE(RunRemoteMemoryShare(r));
  const std::string shown = RunDetails(r, RunsConfig{});
  EXPECT_THAT(shown, HasSubstr("migrations         not observed"));
  EXPECT_TRUE(RunToJson(r, RunsConfig{})["placement"]["remote_memory_share"].is_null());
}

TEST(RunPlacementTest, RunsShowPrintsThemInTextAndJson) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  const RunRecord r = TwoNodeRun(*ledger, "r1");
  const std::string shown = RunDetails(r, RunsConfig{});
  EXPECT_THAT(shown, HasSubstr("120 within a node, 4 across nodes"));
  EXPECT_THAT(shown, HasSubstr("node 0 8.0 s (80%), node 1 2.0 s (20%)"));
  EXPECT_THAT(shown, HasSubstr("node 0 36.0 MiB (36%), node 1 64.0 MiB (64%) at its peak; "
                               "remote 58%"));
  const nlohmann::json j = RunToJson(r, RunsConfig{})["placement"];
  EXPECT_EQ(j["node_migrations"], 120);
  EXPECT_EQ(j["cross_node_migrations"], 4);
  EXPECT_EQ(j["cpu_seconds_by_node"]["1"], 2.0);
  EXPECT_EQ(j["memory_by_node"]["1"]["anon_bytes"], 60 * kMiB);
  EXPECT_NEAR(j["remote_memory_share"].get<double>(), 0.584, 1e-9);
}

// A ledger written before placement was recorded opens, migrates, and reads its runs back.
TEST(RunPlacementTest, ALedgerFromBeforeOpensWithItsRunsUnchanged) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const auto& migrations = LedgerMigrations();
  ASSERT_GE(migrations.size(), 9u);
  for (size_t v = 0; v < 8; v++) {
    ASSERT_EQ(sqlite3_exec(db, std::string(migrations[v]).c_str(), nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  const std::string old_run =
      "PRAGMA user_version=8; PRAGMA application_id=" + std::to_string(kLedgerApplicationId) +
      "; INSERT INTO runs (id, stage, source, start_time, end_time, cpu_seconds) VALUES "
      "('old', 'validate', 'launcher', '2026-12-01T00:00:00.000Z', "
      "'2026-12-01T00:01:00.000Z', 3.5)";
  ASSERT_EQ(sqlite3_exec(db, old_run.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto ledger = OpenOrDie(path);
  const RunRecord r = **ledger->Get("old");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(r.end->facts.cpu_seconds, 3.5);
  EXPECT_TRUE(r.end->facts.memory_by_node.empty());
  EXPECT_FALSE(r.agent.node_migrations);
  // The new columns are there for the runs to come.
  const RunRecord now = TwoNodeRun(*ledger, "new");
  EXPECT_EQ(now.agent.cross_node_migrations, 4u);
}

// Remote share 0.58: above the default threshold (0.5) the run is degraded, naming it; with a
// threshold of 0.6 it is not, and the ledger stores the verdict its writer judged.
TEST(RunPlacementTest, ARunWithMostOfItsMemoryRemoteIsDegradedByRemoteMemory) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = OpenOrDie(path);
  RunRecord r = TwoNodeRun(*ledger, "r1");
  const Verdict v = JudgeRun(r, RunsConfig{});
  EXPECT_EQ(v.kind, VerdictKind::kDegraded);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].cause, "remote_memory");
  EXPECT_NEAR(*v.reasons[0].share, 0.584, 1e-9);
  EXPECT_EQ(v.reasons[0].text,
            "remote memory: 58% of its memory on nodes other than where it ran");
  absl::StatusOr<RunPage> degraded = ledger->ListPage({.verdict = VerdictKind::kDegraded});
  ASSERT_TRUE(degraded.ok()) << degraded.status();
  ASSERT_EQ(degraded->runs.size(), 1u);

  RunsConfig lenient;
  lenient.remote_memory_threshold = 0.6;
  EXPECT_NE(JudgeRun(r, lenient).kind, VerdictKind::kDegraded);
  // Its memory where it ran: 80% of it on node 0, where 80% of its CPU time ran.
  r.end->facts.memory_by_node = {{0, {80 * kMiB, 0}}, {1, {20 * kMiB, 0}}};
  EXPECT_NE(JudgeRun(r, RunsConfig{}).kind, VerdictKind::kDegraded);
}

}  // namespace
}  // namespace stagewatch
