// Ledger lists filtered in SQL by the verdict each row stores, against JudgeRun itself: rows of
// every verdict, written by writers with different thresholds, rows never judged (from before
// the verdict was stored) and rows judged under other rules, read by readers with each
// judgement and with one nobody wrote, a page at a time.
#include <sqlite3.h>

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs/verdict.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::Started;
using testing::TempDir;

RunsConfig Thresholds(double degraded, double normal_wait) {
  RunsConfig c;
  c.degraded_fraction = degraded;
  c.normal_run_queue_wait_fraction = normal_wait;
  return c;
}

void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << ": " << sql;
  sqlite3_free(error);
  sqlite3_close(db);
}

std::string SqlValue(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string out = "<none>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    out = t ? reinterpret_cast<const char*>(t) : "<null>";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// An ended run of 100 s wall time whose verdict turns on the thresholds: `pressure` seconds of
// CPU pressure (a share of 100 s), `wait` seconds of run-queue wait beside 50 s of CPU (the
// normal wait is a share of that), an OOM kill, an agent that saw it or none.
struct Shape {
  double pressure = 0;
  double wait = 0;
  bool oom = false;
  bool observed = true;
  bool ended = true;
};

void Write(Ledger& ledger, const std::string& id, const std::string& stage, absl::Time start,
           const Shape& shape) {
  ASSERT_TRUE(ledger.BeginRun(Started(id, stage, start)).ok());
  if (!shape.ended) return;
  RunEnd end;
  end.end = start + absl::Seconds(100);
  end.exit_code = shape.oom ? std::nullopt : std::optional<int>(0);
  if (shape.oom) end.signal = 9;
  end.facts.oom_kills_kernel = shape.oom ? 1 : 0;
  end.facts.cpu_seconds = 50;
  end.facts.cpu_pressure_seconds = shape.pressure;
  ASSERT_TRUE(ledger.EndRun(id, end).ok());
  if (!shape.observed) return;
  AgentFacts facts;
  facts.oom_kills_userspace = 0;
  facts.reclaim_stall_seconds = 0;
  facts.run_queue_wait_seconds = shape.wait;
  facts.preemptors_observed = facts.anomalies_observed = true;
  ASSERT_TRUE(ledger.AddAgentFacts(id, facts).ok());
}

class LedgerListTest : public ::testing::Test {
 protected:
  // 96 runs in two stages, every verdict under every judgement below, start times with ties,
  // written by three writers with different thresholds; then 10 rows made unjudged (as from
  // before schema 6) and 10 judged under other rules, with a wrong verdict.
  void SetUp() override {
    const std::vector<Shape> shapes = {
        {.pressure = 0},        {.pressure = 3},           {.pressure = 6},
        {.pressure = 9},        {.pressure = 12},          {.wait = 4},
        {.wait = 8},            {.wait = 15},              {.oom = true},
        {.observed = false},    {.pressure = 7, .observed = false}, {.ended = false},
    };
    const std::vector<RunsConfig> writers = {Thresholds(0.05, 0.05), Thresholds(0.1, 0),
                                             Thresholds(0.08, 0.1)};
    for (int i = 0; i < 96; ++i) {
      auto ledger = Ledger::Open(path_, writers[i % 3]);
      ASSERT_TRUE(ledger.ok()) << ledger.status();
      // Every third run starts at the same time as the one before it.
      Write(**ledger, absl::StrFormat("r%03d", i), i % 4 == 0 ? "train" : "validate",
            At((i - (i % 3 == 2)) * 10), shapes[i % shapes.size()]);
    }
    Sql(path_, "UPDATE runs SET verdict = NULL, verdict_judged_with = NULL "
               "WHERE id IN (SELECT id FROM runs ORDER BY id LIMIT 10 OFFSET 20)");
    Sql(path_, "UPDATE runs SET verdict = 'interrupted', verdict_judged_with = '0:0.05/0.05' "
               "WHERE id IN (SELECT id FROM runs ORDER BY id LIMIT 10 OFFSET 50)");
  }

  // Every run the filter takes, by brute force: each row judged with `judging`.
  std::vector<std::string> Expected(Ledger& ledger, const RunsConfig& judging,
                                    const RunFilter& f) {
    absl::StatusOr<std::vector<RunRecord>> all = ledger.List({.limit = 100000});
    EXPECT_TRUE(all.ok()) << all.status();
    std::vector<std::string> ids;
    for (const RunRecord& r : *all) {
      if (!f.stage.empty() && r.start.stage != f.stage) continue;
      if (f.since && r.start.start < *f.since) continue;
      if (f.verdict && JudgeRun(r, judging).kind != *f.verdict) continue;
      ids.push_back(r.start.id);
    }
    return ids;
  }

  // The filter's runs, `page` at a time, following each page's cursor.
  std::vector<std::string> Paged(Ledger& ledger, RunFilter f, int page) {
    f.limit = page;
    std::vector<std::string> ids;
    for (int pages = 0; pages < 1000; ++pages) {
      absl::StatusOr<RunPage> p = ledger.ListPage(f);
      EXPECT_TRUE(p.ok()) << p.status();
      if (!p.ok()) break;
      EXPECT_LE(static_cast<int>(p->runs.size()), page);
      for (const RunRecord& r : p->runs) ids.push_back(r.start.id);
      if (!p->more) break;
      EXPECT_EQ(static_cast<int>(p->runs.size()), page) << "a page short of its limit says more";
      f.before = p->runs.back().start.id;
    }
    return ids;
  }

  TempDir dir_;
  const std::string path_ = dir_.file("ledger.db");
};

TEST_F(LedgerListTest, EveryVerdictFilterIsExactlyWhatJudgeRunSaysForTheReadersThresholds) {
  ASSERT_EQ(SqlValue(path_, "SELECT count(*) FROM runs WHERE verdict IS NULL"), "10");
  ASSERT_EQ(SqlValue(path_, "SELECT count(DISTINCT verdict_judged_with) FROM runs"), "4");
  const std::vector<RunsConfig> readers = {Thresholds(0.05, 0.05), Thresholds(0.1, 0),
                                           Thresholds(0.08, 0.1), Thresholds(0.07, 0.02)};
  std::map<std::string, int> seen;  // verdict → runs found under some reader
  for (const RunsConfig& judging : readers) {
    auto ledger = Ledger::OpenForReading(path_, judging);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    for (VerdictKind v : {VerdictKind::kRunning, VerdictKind::kClean, VerdictKind::kUnobserved,
                          VerdictKind::kDegraded, VerdictKind::kInterrupted}) {
      for (const char* stage : {"", "train"}) {
        for (std::optional<absl::Time> since :
             {std::optional<absl::Time>(), std::optional<absl::Time>(At(300))}) {
          const RunFilter f{.stage = stage, .since = since, .verdict = v};
          const std::vector<std::string> expected = Expected(**ledger, judging, f);
          seen[std::string(VerdictName(v))] += expected.size();
          for (int page : {1, 4, 1000}) {
            EXPECT_EQ(Paged(**ledger, f, page), expected)
                << VerdictName(v) << " stage \"" << stage << "\" page " << page
                << " judged with " << VerdictJudgedWith(judging);
          }
        }
      }
    }
    // Without a verdict, every run, newest first, ties by id.
    EXPECT_EQ(Paged(**ledger, {}, 7), Expected(**ledger, judging, {}));
  }
  for (const char* v : {"running", "clean", "unobserved", "degraded", "interrupted"}) {
    EXPECT_GT(seen[v], 0) << "no " << v << " run: the test does not cover it";
  }
}

TEST_F(LedgerListTest, AWriterStoresJudgeRunsVerdictAndJudgesTheRowsNotJudgedYet) {
  const RunsConfig judging = Thresholds(0.05, 0.05);
  auto writer = Ledger::Open(path_, judging);  // judges the 20 unjudged or stale rows
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(SqlValue(path_, "SELECT count(*) FROM runs WHERE verdict IS NULL OR "
                            "verdict_judged_with LIKE '0:%'"),
            "0");
  absl::StatusOr<std::vector<RunRecord>> all = (*writer)->List({.limit = 1000});
  ASSERT_TRUE(all.ok());
  int judged_here = 0;
  for (const RunRecord& r : *all) {
    const std::string with = SqlValue(
        path_, absl::StrCat("SELECT verdict_judged_with FROM runs WHERE id = '", r.start.id, "'"));
    if (with != VerdictJudgedWith(judging)) continue;  // another writer's: its own thresholds
    ++judged_here;
    EXPECT_EQ(SqlValue(path_, absl::StrCat("SELECT verdict FROM runs WHERE id = '", r.start.id,
                                           "'")),
              VerdictName(JudgeRun(r, judging).kind))
        << r.start.id;
  }
  EXPECT_GE(judged_here, 40);  // its own 32, and the 20 it judged at open (a few its own)
}

TEST(LedgerVerdictTest, EveryWriteStoresTheVerdictItLeaves) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  auto stored = [&] { return SqlValue(path, "SELECT verdict FROM runs WHERE id = 'r1'"); };
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "s", At(0))).ok());
  EXPECT_EQ(stored(), "running");
  RunEnd end;
  end.end = At(100);
  end.exit_code = 0;
  end.facts.cpu_seconds = 50;
  ASSERT_TRUE(ledger->EndRun("r1", end).ok());
  EXPECT_EQ(stored(), "unobserved");
  AgentFacts facts;
  facts.oom_kills_userspace = 0;
  facts.reclaim_stall_seconds = 0;
  facts.run_queue_wait_seconds = 0;
  facts.preemptors_observed = facts.anomalies_observed = true;
  ASSERT_TRUE(ledger->AddAgentFacts("r1", facts).ok());
  EXPECT_EQ(stored(), "clean");
  AgentFacts kill;
  kill.oom_kills_userspace = 1;
  kill.oom_victims.push_back({1234, "python3", "userspace", "earlyoom"});
  ASSERT_TRUE(ledger->AddAgentFacts("r1", kill).ok());
  EXPECT_EQ(stored(), "interrupted");
  EXPECT_EQ(SqlValue(path, "SELECT verdict_judged_with FROM runs WHERE id = 'r1'"),
            "2:0.05/0.05/0.5");
}

// The ledger keeps times to the millisecond: a run whose share sits on the threshold only at
// that precision is judged as its row reads back, not as the writer held it.
TEST(LedgerVerdictTest, TheStoredVerdictIsTheRowsAtTheLedgersMillisecond) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  ASSERT_TRUE(ledger->BeginRun(Started("edge-1", "s", At(0))).ok());
  RunEnd end;
  end.end = At(100) + absl::Microseconds(900);  // read back: 100.000 s of wall time
  end.exit_code = 0;
  end.facts.cpu_pressure_seconds = 5.00001;  // 5.00001 / 100.0009 < 0.05 <= 5.00001 / 100
  ASSERT_TRUE(ledger->EndRun("edge-1", end).ok());
  const RunRecord row = **ledger->Get("edge-1");
  ASSERT_EQ(JudgeRun(row, RunsConfig{}).kind, VerdictKind::kDegraded);
  EXPECT_EQ(SqlValue(path, "SELECT verdict FROM runs WHERE id = 'edge-1'"), "degraded");
}

TEST(LedgerVerdictTest, ACursorThatNamesNoRunIsNotFound) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "s", At(0))).ok());
  absl::StatusOr<RunPage> page = ledger->ListPage({.before = "gone-1"});
  EXPECT_EQ(page.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(page.status().message(), HasSubstr("gone-1"));
}

TEST(LedgerVerdictTest, TheJudgedWithTextIsExactAndNamesTheRules) {
  EXPECT_EQ(VerdictJudgedWith(Thresholds(0.05, 0.05)), "2:0.05/0.05/0.5");
  EXPECT_EQ(VerdictJudgedWith(Thresholds(0.1, 0)), "2:0.1/0/0.5");
  // Thresholds that differ in the 17th digit are two judgements, not one.
  EXPECT_NE(VerdictJudgedWith(Thresholds(0.05, 0.05)),
            VerdictJudgedWith(Thresholds(std::nextafter(0.05, 1.0), 0.05)));
}

}  // namespace
}  // namespace stagewatch
