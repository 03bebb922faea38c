// The ledger's per-run time series: schema v2, its migration from a v1 ledger, and its bound;
// and the memory a connection holds as the ledger grows.
#include <sqlite3.h>

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "runs/ledger_schema.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::At;
using testing::Started;
using testing::TempDir;

int64_t SqliteInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  int64_t out = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    out = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// A ledger as a stagewatch of schema version 1 left it, with one run in it.
void WriteV1Ledger(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql = std::string(LedgerMigrations()[0]) +
                          "INSERT INTO runs (id, stage, source, start_time) VALUES ('old-1', "
                          "'validate', 'launcher', '2026-11-30T10:00:00.000Z');"
                          "PRAGMA user_version=1; PRAGMA application_id=" +
                          std::to_string(kLedgerApplicationId) + ";";
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  sqlite3_close(db);
}

RunSample Point(int64_t second, uint64_t memory) {
  return {At(second), memory, 200 << 20, 0.5, 0.01, 0.02};
}

TEST(LedgerSamplesTest, MigratesAVersionOneLedgerKeepingItsRuns) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  WriteV1Ledger(path);
  ASSERT_EQ(SqliteInt(path, "PRAGMA user_version"), 1);
  // Reading alone never migrates: it says who will.
  absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("schema version 1"), std::string::npos);

  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ(SqliteInt(path, "PRAGMA user_version"), Ledger::SchemaVersion());
  EXPECT_GE(Ledger::SchemaVersion(), 2);
  absl::StatusOr<std::optional<RunRecord>> old = (*ledger)->Get("old-1");
  ASSERT_TRUE(old.ok() && *old);
  EXPECT_EQ((*old)->start.stage, "validate");
  ASSERT_TRUE((*ledger)->AddSamples("old-1", {Point(1, 10 << 20), Point(2, 20 << 20)}).ok());
  EXPECT_EQ(SqliteInt(path, "SELECT count(*) FROM run_samples WHERE run_id = 'old-1'"), 2);
}

TEST(LedgerSamplesTest, WritesAndReadsPointsOldestFirst) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "train", At(0))).ok());
  ASSERT_TRUE(ledger->BeginRun(Started("r2", "train", At(0))).ok());
  RunSample unread{At(3)};  // nothing read at that instant: every figure stays unknown
  ASSERT_TRUE(ledger->AddSamples("r1", {Point(2, 30 << 20), Point(1, 10 << 20)}).ok());
  ASSERT_TRUE(ledger->AddSamples("r1", {unread}).ok());
  ASSERT_TRUE(ledger->AddSamples("r2", {Point(1, 99)}).ok());
  absl::StatusOr<std::vector<RunSample>> points = ledger->Samples("r1");
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 3u);
  EXPECT_EQ((*points)[0].at, At(1));
  EXPECT_EQ((*points)[0].memory_bytes, 10u << 20);
  EXPECT_EQ((*points)[1].memory_bytes, 30u << 20);
  EXPECT_EQ((*points)[1].memory_limit_bytes, 200u << 20);
  EXPECT_DOUBLE_EQ(*(*points)[1].cpu_cores, 0.5);
  EXPECT_DOUBLE_EQ(*(*points)[1].memory_pressure, 0.01);
  EXPECT_DOUBLE_EQ(*(*points)[1].cpu_pressure, 0.02);
  EXPECT_FALSE((*points)[2].memory_bytes.has_value());
  EXPECT_FALSE((*points)[2].cpu_cores.has_value());
  EXPECT_TRUE(ledger->Samples("nope")->empty());
}

TEST(LedgerSamplesTest, StaysWithinTheBoundAndKeepsTheEnds) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  ASSERT_TRUE(ledger->BeginRun(Started("long", "train", At(0))).ok());
  const int total = 3 * Ledger::kMaxSamplesPerRun + 7;  // a long run, written in batches
  std::vector<RunSample> batch;
  for (int i = 0; i < total; ++i) {
    batch.push_back(Point(i, uint64_t(i)));
    if (batch.size() == 40 || i == total - 1) {
      ASSERT_TRUE(ledger->AddSamples("long", batch).ok());
      batch.clear();
      ASSERT_LE(SqliteInt(path, "SELECT count(*) FROM run_samples"), Ledger::kMaxSamplesPerRun);
    }
  }
  std::vector<RunSample> points = *ledger->Samples("long");
  EXPECT_GE(points.size(), size_t(Ledger::kMaxSamplesPerRun / 2));
  EXPECT_LE(points.size(), size_t(Ledger::kMaxSamplesPerRun));
  EXPECT_EQ(points.front().at, At(0));
  EXPECT_EQ(points.back().at, At(total - 1));
  // Spread over the whole run: no gap much wider than the average spacing.
  const double mean_gap = double(total - 1) / double(points.size() - 1);
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_LE(absl::ToDoubleSeconds(points[i].at - points[i - 1].at), 4 * mean_gap + 1);
  }
}

// A long-lived agent's connection reads more and more of a growing ledger: what SQLite holds
// for it stays within the small page cache the ledger sets (SQLite's default, 2 MB a
// connection, would fill here), and the rows all read back.
TEST(LedgerSamplesTest, AConnectionsMemoryStaysSmallAsTheLedgerGrows) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  const int64_t opened = sqlite3_memory_used();
  std::map<std::string, std::vector<RunSample>> points;
  for (int r = 0; r < 20; r++) {
    const std::string id = "r" + std::to_string(r);
    ASSERT_TRUE(ledger->BeginRun(Started(id, "train", At(0))).ok());
    for (int i = 0; i < 4000; i++) points[id].push_back(Point(i, uint64_t(i) << 12));
  }
  ASSERT_TRUE(ledger->AddSamplesOfRuns(points).ok());
  ASSERT_GT(SqliteInt(path, "PRAGMA page_count") * SqliteInt(path, "PRAGMA page_size"),
            int64_t{4} << 20);  // twice SQLite's default cache
  for (const auto& [id, written] : points) {
    absl::StatusOr<std::vector<RunSample>> read = ledger->Samples(id);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->size(), written.size());
    EXPECT_EQ(read->back().memory_bytes, written.back().memory_bytes);
  }
  EXPECT_LT(sqlite3_memory_used() - opened, int64_t{512} << 10);
}

// The discovered runs' points are written together, the statements prepared once for all the
// runs: each run is counted and thinned on its own, whichever came before it.
TEST(LedgerSamplesTest, RunsWrittenTogetherAreEachCountedAndThinnedOnTheirOwn) {
  TempDir dir;
  auto ledger = *Ledger::Open(dir.file("ledger.db"));
  std::map<std::string, std::vector<RunSample>> points;
  const int sizes[] = {3, Ledger::kMaxSamplesPerRun + 500, 7};  // "a", "b", "c" in map order
  for (int r = 0; r < 3; r++) {
    const std::string id(1, char('a' + r));
    ASSERT_TRUE(ledger->BeginRun(Started(id, "train", At(0))).ok());
    for (int i = 0; i < sizes[r]; i++) points[id].push_back(Point(i, uint64_t(r + 1) << 20));
  }
  ASSERT_TRUE(ledger->AddSamplesOfRuns(points).ok());
  for (int r = 0; r < 3; r++) {
    const std::string id(1, char('a' + r));
    absl::StatusOr<std::vector<RunSample>> read = ledger->Samples(id);
    ASSERT_TRUE(read.ok()) << read.status();
    if (sizes[r] > Ledger::kMaxSamplesPerRun) {
      EXPECT_LE(read->size(), size_t(Ledger::kMaxSamplesPerRun)) << id;
    } else {
      EXPECT_EQ(read->size(), size_t(sizes[r])) << id;
    }
    for (const RunSample& p : *read) EXPECT_EQ(p.memory_bytes, uint64_t(r + 1) << 20) << id;
  }
}

}  // namespace
}  // namespace stagewatch
