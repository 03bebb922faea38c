#include "runs/ledger.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger_schema.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::At;
using testing::Started;
using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<Ledger> OpenOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  EXPECT_TRUE(ledger.ok()) << ledger.status();
  return ledger.ok() ? *std::move(ledger) : nullptr;
}

// Asks SQLite itself, on a connection of its own, for a single value.
std::string SqliteValue(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    out = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

RunEnd Ended(absl::Time at, int exit_code) {
  RunEnd end;
  end.end = at;
  end.exit_code = exit_code;
  end.facts.memory_peak_bytes = 123456789;
  end.facts.memory_limit_bytes = 209715200;
  end.facts.oom_kills_kernel = 0;
  end.facts.cpu_seconds = 1.5;
  return end;
}

TEST(LedgerTest, CreatesAVersionedWalLedgerWithItsDirectory) {
  TempDir dir;
  const std::string path = dir.file("nested/deeper/ledger.db");
  ASSERT_NE(OpenOrDie(path), nullptr);
  EXPECT_EQ(SqliteValue(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(SqliteValue(path, "PRAGMA user_version"), std::to_string(Ledger::SchemaVersion()));
  EXPECT_EQ(SqliteValue(path, "PRAGMA application_id"), std::to_string(kLedgerApplicationId));
  EXPECT_EQ(SqliteValue(path, "SELECT count(*) FROM runs"), "0");
}

TEST(LedgerTest, RecordsARunFromStartToEndAndKeepsItAcrossReopening) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  {
    auto ledger = OpenOrDie(path);
    RunStart start = Started("r1", "validate", At(0));
    start.pipeline = "nightly";
    start.launcher_pid = 4242;
    start.limits.memory_max_bytes = 209715200;
    start.limits.cpu_max_cores = 0.5;
    start.limits.cpu_weight = 200;
    ASSERT_TRUE(ledger->BeginRun(start).ok());
    auto open = ledger->Get("r1");
    ASSERT_TRUE(open.ok() && *open);
    EXPECT_FALSE((*open)->end.has_value());
    ASSERT_TRUE(ledger->EndRun("r1", Ended(At(90), 3)).ok());
  }
  auto ledger = OpenOrDie(path);  // a new process would see the same
  auto run = ledger->Get("r1");
  ASSERT_TRUE(run.ok() && *run) << run.status();
  const RunRecord& r = **run;
  EXPECT_EQ(r.start.stage, "validate");
  EXPECT_EQ(r.start.pipeline, "nightly");
  EXPECT_THAT(r.start.command, ElementsAre("python3", "validate.py"));
  EXPECT_EQ(r.start.launcher_pid, 4242);
  EXPECT_EQ(r.start.start, At(0));
  EXPECT_EQ(r.start.limits.memory_max_bytes, 209715200u);
  EXPECT_EQ(r.start.limits.cpu_max_cores, 0.5);
  EXPECT_EQ(r.start.limits.cpu_weight, 200u);
  ASSERT_TRUE(r.end.has_value());
  EXPECT_EQ(r.end->end, At(90));
  EXPECT_EQ(r.end->exit_code, 3);
  EXPECT_FALSE(r.end->signal.has_value());
  EXPECT_EQ(r.end->facts.memory_peak_bytes, 123456789u);
  EXPECT_EQ(r.end->facts.cpu_seconds, 1.5);
  EXPECT_FALSE(r.end->facts.cpu_throttled_seconds.has_value()) << "not observed stays unknown";
  EXPECT_EQ(*r.Wall(), absl::Seconds(90));
  EXPECT_FALSE(r.agent_observed);
  EXPECT_EQ(SqliteValue(path, "SELECT start_time FROM runs"), "2026-09-21T14:13:20.000Z");
}

TEST(LedgerTest, RefusesADuplicateIdAndASecondEnd) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "a", At(0))).ok());
  absl::Status again = ledger->BeginRun(Started("r1", "b", At(5)));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("pick another --run-id"));
  ASSERT_TRUE(ledger->EndRun("r1", Ended(At(10), 0)).ok());
  EXPECT_EQ(ledger->EndRun("r1", Ended(At(11), 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ledger->EndRun("nope", Ended(At(11), 1)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*ledger->Get("r1"))->end->exit_code, 0) << "the first end stands";
}

// A batch is one commit for many writes; a write refused within it leaves the others, and a
// batch never committed (the process died) leaves nothing of itself in the file.
TEST(LedgerTest, ABatchIsOneCommitAndAnUncommittedOneLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = OpenOrDie(path);
  const uint64_t before = ledger->commits();
  ASSERT_TRUE(ledger->BeginBatch().ok());
  EXPECT_EQ(ledger->BeginBatch().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "a", At(0))).ok());
  EXPECT_EQ(ledger->BeginRun(Started("r1", "b", At(5))).code(), absl::StatusCode::kAlreadyExists);
  AgentFacts facts;
  facts.oom_kills_userspace = 2;
  ASSERT_TRUE(ledger->AddAgentFacts("r1", facts).ok());
  EXPECT_EQ(ledger->AddAgentFacts("nope", facts).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(ledger->EndRun("r1", Ended(At(10), 0)).ok());
  EXPECT_EQ(SqliteValue(path, "SELECT count(*) FROM runs"), "0") << "not in the file before";
  ASSERT_TRUE(ledger->CommitBatch().ok());
  EXPECT_EQ(ledger->commits() - before, 1u);
  EXPECT_EQ(SqliteValue(path, "SELECT oom_kills_userspace FROM runs WHERE id = 'r1'"), "2");
  EXPECT_EQ(SqliteValue(path, "SELECT stage FROM runs WHERE id = 'r1'"), "a");

  ASSERT_TRUE(ledger->BeginBatch().ok());
  ASSERT_TRUE(ledger->BeginRun(Started("r2", "a", At(20))).ok());
  ledger.reset();  // closed with the batch open, as by a crash
  EXPECT_EQ(SqliteValue(path, "SELECT count(*) FROM runs"), "1");
  EXPECT_TRUE((*OpenOrDie(path)->Get("r1"))->end);
}

// Runs SQL on a connection of its own (as another program editing the file would).
void SqliteExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

RunEnd EndedWithLimits(absl::Time at) {
  RunEnd end = Ended(at, 0);
  end.closed_by = RunCloser::kAgent;
  end.facts.limits = RunLimits{.memory_max_bytes = 1, .memory_high_bytes = 100663296,
                               .cpu_max_cores = 0.3, .cpu_weight = 50};
  return end;
}

// A discovered run's limits are part of the write of its end: in a batch they cost no
// transaction of their own, alone the end is one commit, and a write refused half-way (here by
// a trigger on the limits) leaves the run neither ended nor with the limits.
TEST(LedgerTest, ADiscoveredRunsLimitsLandWithItsEndInOneWrite) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = OpenOrDie(path);
  for (const char* id : {"d1", "d2", "d3"}) {
    RunStart start = Started(id, "s", At(0));
    start.source = RunSource::kDiscovered;
    ASSERT_TRUE(ledger->BeginRun(start).ok());
  }
  RunStart launched = Started("l1", "s", At(0));
  launched.limits.cpu_max_cores = 2;
  ASSERT_TRUE(ledger->BeginRun(launched).ok());

  uint64_t before = ledger->commits();
  ASSERT_TRUE(ledger->BeginBatch().ok());
  ASSERT_TRUE(ledger->EndRun("d1", EndedWithLimits(At(10))).ok());
  ASSERT_TRUE(ledger->EndRun("l1", EndedWithLimits(At(10))).ok());
  ASSERT_TRUE(ledger->CommitBatch().ok());
  EXPECT_EQ(ledger->commits() - before, 1u);
  // memory.max is the kernel's limit at the end (Ended: 200 MiB), not the sampled one.
  EXPECT_EQ(SqliteValue(path, "SELECT end_time IS NOT NULL FROM runs WHERE id = 'd1'"), "1");
  EXPECT_EQ(SqliteValue(path, "SELECT limit_memory_max_bytes || ' ' || limit_memory_high_bytes || "
                              "' ' || limit_cpu_max_cores || ' ' || limit_cpu_weight FROM runs "
                              "WHERE id = 'd1'"),
            "209715200 100663296 0.3 50");
  EXPECT_EQ(SqliteValue(path, "SELECT ifnull(limit_memory_high_bytes, 'none') || ' ' || "
                              "limit_cpu_max_cores FROM runs WHERE id = 'l1'"),
            "none 2.0")
      << "a launcher run keeps the limits it was started with";

  before = ledger->commits();
  ASSERT_TRUE(ledger->EndRun("d2", EndedWithLimits(At(10))).ok());
  EXPECT_EQ(ledger->commits() - before, 1u) << "an end outside a batch is one transaction";
  EXPECT_EQ(SqliteValue(path, "SELECT limit_cpu_weight FROM runs WHERE id = 'd2'"), "50");

  SqliteExec(path, "CREATE TRIGGER refuse_limits BEFORE UPDATE OF limit_cpu_weight ON runs "
                   "WHEN NEW.limit_cpu_weight IS NOT OLD.limit_cpu_weight "
                   "BEGIN SELECT RAISE(ABORT, 'limits refused'); END");
  ASSERT_TRUE(ledger->BeginBatch().ok());
  EXPECT_FALSE(ledger->EndRun("d3", EndedWithLimits(At(10))).ok());
  ASSERT_TRUE(ledger->CommitBatch().ok());
  EXPECT_EQ(SqliteValue(path, "SELECT (end_time IS NULL) || ' ' || "
                              "ifnull(limit_cpu_max_cores, 'none') FROM runs WHERE id = 'd3'"),
            "1 none")
      << "neither the end nor the limits";
}

TEST(LedgerTest, MergesAgentFactsIntoTheRun) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "train", At(0))).ok());
  AgentFacts first;
  first.run_queue_wait_seconds = 1.25;
  first.run_queue_throttled_seconds = 1;
  first.reclaim_stall_seconds = 0.25;
  first.preemptors = {{"validate", 3}};
  first.oom_kills_userspace = 0;
  ASSERT_TRUE(ledger->AddAgentFacts("r1", first).ok());
  AgentFacts second;
  second.run_queue_wait_seconds = 0.75;
  second.run_queue_throttled_seconds = 0.5;
  second.reclaim_stall_seconds = 0.5;
  second.preemptors = {{"validate", 2}, {"ingest", 1}};
  second.oom_kills_userspace = 1;
  second.oom_victims = {{1234, "python3", "userspace", "earlyoom"}};
  second.anomalies = {{"memory_climb", At(30), "climbing 10 MiB/s"}};
  ASSERT_TRUE(ledger->AddAgentFacts("r1", second).ok());
  EXPECT_EQ(ledger->AddAgentFacts("missing", second).code(), absl::StatusCode::kNotFound);

  const RunRecord r = **ledger->Get("r1");
  EXPECT_TRUE(r.agent_observed);
  EXPECT_EQ(r.agent.run_queue_wait_seconds, 2.0);
  EXPECT_EQ(r.agent.run_queue_throttled_seconds, 1.5);
  EXPECT_EQ(r.agent.reclaim_stall_seconds, 0.75);
  EXPECT_EQ(r.agent.oom_kills_userspace, 1u);
  EXPECT_THAT(r.agent.preemptors, ElementsAre(Pair("ingest", 1), Pair("validate", 5)));
  ASSERT_EQ(r.agent.oom_victims.size(), 1u);
  EXPECT_EQ(r.agent.oom_victims[0].comm, "python3");
  EXPECT_EQ(r.agent.oom_victims[0].killer, "earlyoom");
  ASSERT_EQ(r.agent.anomalies.size(), 1u);
  EXPECT_EQ(r.agent.anomalies[0].name, "memory_climb");
  EXPECT_EQ(r.agent.anomalies[0].at, At(30));
  EXPECT_TRUE(r.agent.anomalies_observed);
}

TEST(LedgerTest, ListsNewestFirstByStageAndStartAndFindsOpenRunsByCgroup) {
  TempDir dir;
  auto ledger = OpenOrDie(dir.file("ledger.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("a1", "train", At(0))).ok());
  ASSERT_TRUE(ledger->BeginRun(Started("b1", "validate", At(10))).ok());
  ASSERT_TRUE(ledger->BeginRun(Started("a2", "train", At(20))).ok());
  ASSERT_TRUE(ledger->EndRun("a1", Ended(At(5), 0)).ok());

  auto ids = [&](const RunFilter& f) {
    std::vector<std::string> out;
    const absl::StatusOr<std::vector<RunRecord>> runs = ledger->List(f);
    EXPECT_TRUE(runs.ok()) << runs.status();
    for (const RunRecord& r : *runs) out.push_back(r.start.id);
    return out;
  };
  EXPECT_THAT(ids({}), ElementsAre("a2", "b1", "a1"));
  EXPECT_THAT(ids({.stage = "train"}), ElementsAre("a2", "a1"));
  EXPECT_THAT(ids({.since = At(10)}), ElementsAre("a2", "b1"));
  EXPECT_THAT(ids({.open_only = true}), ElementsAre("a2", "b1"));
  EXPECT_THAT(ids({.limit = 1}), ElementsAre("a2"));

  auto open = ledger->FindNewestByCgroup("/stagewatch/train/a2");
  ASSERT_TRUE(open.ok() && *open);
  EXPECT_EQ((*open)->start.id, "a2");
  EXPECT_FALSE((*open)->end);
  auto ended = ledger->FindNewestByCgroup("/stagewatch/train/a1");
  ASSERT_TRUE(ended.ok() && *ended);
  EXPECT_EQ((*ended)->start.id, "a1");
  EXPECT_TRUE((*ended)->end);
  EXPECT_FALSE(*ledger->FindNewestByCgroup("/stagewatch/train/a3")) << "no such run";
}

// The agent looks up a cgroup path's newest run at every cgroup made beneath a stage's top;
// on a ledger of many rows that must be an index search, not a scan of every run.
TEST(LedgerTest, FindsTheNewestRunOfACgroupByIndex) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  ASSERT_NE(OpenOrDie(path), nullptr);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "EXPLAIN QUERY PLAN SELECT * FROM runs WHERE cgroup_path = 'x' "
                               "ORDER BY start_time DESC LIMIT 1",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  std::string plan;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    plan += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_THAT(plan, HasSubstr("SEARCH runs USING INDEX runs_by_cgroup_start (cgroup_path=?)"));
}

TEST(LedgerTest, LeavesAFileThatIsNotADatabaseUntouched) {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  const std::string text(8192, 'x');
  std::ofstream(path) << text;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger.ok());
  EXPECT_THAT(ledger.status().message(), HasSubstr("is not a stagewatch ledger"));
  EXPECT_THAT(ledger.status().message(), HasSubstr("left untouched"));
  EXPECT_EQ(Slurp(path), text);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(LedgerTest, LeavesAnotherSqliteDatabaseUntouched) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE photos (id INTEGER); INSERT INTO photos VALUES (1);", nullptr,
               nullptr, nullptr);
  sqlite3_close(db);
  const std::string before = Slurp(path);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger.ok());
  EXPECT_THAT(ledger.status().message(), HasSubstr("not a stagewatch ledger"));
  EXPECT_EQ(Slurp(path), before);
  EXPECT_EQ(SqliteValue(path, "PRAGMA journal_mode"), "delete");
}

TEST(LedgerTest, RefusesACorruptLedgerAndNeverOverwritesIt) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  {
    auto ledger = OpenOrDie(path);
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(ledger->BeginRun(Started("run-" + std::to_string(i), "s", At(i))).ok());
    }
  }
  // Checkpointed into the main file (the last connection closed); now damage its pages.
  std::string bytes = Slurp(path);
  ASSERT_GT(bytes.size(), 3 * 4096u);
  for (size_t i = 4096 + 100; i < 3 * 4096; ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger.ok());
  EXPECT_THAT(ledger.status().message(), HasSubstr("left untouched"));
  EXPECT_TRUE(Slurp(path) == bytes) << "the corrupt ledger was written to";
}

TEST(LedgerTest, RefusesALedgerFromANewerStagewatch) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  OpenOrDie(path).reset();
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger.ok());
  EXPECT_THAT(ledger.status().message(), HasSubstr("schema version 99, newer"));
}

TEST(LedgerTest, SaysWhatToDoWithAPathItCannotUse) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<Ledger>> is_dir = Ledger::Open(dir.path());
  ASSERT_FALSE(is_dir.ok());
  EXPECT_THAT(is_dir.status().message(), HasSubstr("is a directory"));
  std::ofstream(dir.file("plain")) << "x";
  absl::StatusOr<std::unique_ptr<Ledger>> under_file = Ledger::Open(dir.file("plain/ledger.db"));
  ASSERT_FALSE(under_file.ok());
  EXPECT_THAT(under_file.status().message(), HasSubstr("--ledger.path"));
}

TEST(LedgerTest, AReaderCreatesNothingAndCannotWrite) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  EXPECT_FALSE(Ledger::OpenForReading(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path)) << "a reader made the file";
  {
    auto writer = OpenOrDie(path);
    ASSERT_TRUE(writer->BeginRun(Started("r1", "s", At(0))).ok());
  }
  absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto run = (*reader)->Get("r1");
  ASSERT_TRUE(run.ok() && *run);
  EXPECT_FALSE((*reader)->BeginRun(Started("r2", "s", At(1))).ok());
}

TEST(LedgerTest, TwoWritersAtOnceLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  OpenOrDie(path).reset();
  constexpr int kRuns = 100;
  auto writer = [&](const std::string& prefix) {
    auto ledger = OpenOrDie(path);
    for (int i = 0; i < kRuns; ++i) {
      const std::string id = prefix + std::to_string(i);
      EXPECT_TRUE(ledger->BeginRun(Started(id, prefix, At(i))).ok());
      EXPECT_TRUE(ledger->EndRun(id, Ended(At(i + 1), 0)).ok());
      AgentFacts facts;
      facts.run_queue_wait_seconds = 0.5;
      EXPECT_TRUE(ledger->AddAgentFacts(id, facts).ok());
    }
  };
  std::thread launcher(writer, "launcher");
  std::thread agent(writer, "agent");
  launcher.join();
  agent.join();
  EXPECT_EQ(SqliteValue(path, "SELECT count(*) FROM runs WHERE end_time IS NOT NULL AND "
                              "run_queue_wait_seconds = 0.5"),
            std::to_string(2 * kRuns));
}

// A writer killed with SIGKILL mid-write leaves a readable ledger holding every run it had
// finished (told to the parent through a pipe after each commit).
TEST(LedgerTest, AWriterKilledMidWriteLosesNoFinishedRun) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  OpenOrDie(path).reset();
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(done[0]);
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
    if (!ledger.ok()) _exit(1);
    for (int i = 0;; ++i) {
      const std::string id = "run-" + std::to_string(i);
      RunStart start = Started(id, "s", At(i));
      start.command.assign(50, std::string(200, 'a'));  // big rows: more pages per write
      if (!(*ledger)->BeginRun(start).ok() || !(*ledger)->EndRun(id, Ended(At(i + 1), 0)).ok()) {
        _exit(2);
      }
      if (write(done[1], &i, sizeof i) != sizeof i) _exit(3);
    }
  }
  close(done[1]);
  int last = -1;
  for (int n; last < 300 && read(done[0], &n, sizeof n) == sizeof n;) last = n;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(done[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own: " << status;
  ASSERT_GE(last, 300);

  auto ledger = OpenOrDie(path);
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(SqliteValue(path, "PRAGMA integrity_check"), "ok");
  for (int i = 0; i <= last; ++i) {
    auto run = ledger->Get("run-" + std::to_string(i));
    ASSERT_TRUE(run.ok() && *run) << "run " << i << " of " << last << " finished runs is lost";
    ASSERT_TRUE((*run)->end.has_value()) << "run " << i << " lost its end";
  }
}

}  // namespace
}  // namespace stagewatch
