#include "runs/ledger.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runs/json_text.h"
#include "runs/ledger_path.h"
#include "runs/ledger_schema.h"
#include "runs/ledger_sql.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;
using ledger_sql::DecodeRow;
using ledger_sql::kColumns;
using ledger_sql::QueryInt;
using ledger_sql::SqliteError;
using ledger_sql::Statement;
using ledger_sql::Transaction;

constexpr int kBusyTimeoutMs = 10000;
constexpr int kPageCacheKib = 256;

json VictimsJson(const std::vector<OomVictim>& victims) {
  json out = json::array();
  for (const OomVictim& v : victims) {
    out.push_back({{"pid", v.pid}, {"comm", v.comm}, {"kind", v.kind}, {"killer", v.killer}});
  }
  return out;
}

json AnomaliesJson(const std::vector<RunAnomaly>& anomalies) {
  json out = json::array();
  for (const RunAnomaly& a : anomalies) {
    out.push_back({{"name", a.name}, {"at", FormatRfc3339(a.at)}, {"detail", a.detail}});
  }
  return out;
}

// Text columns written by this code; a bad one means someone edited the file by hand.
json ParseJsonColumn(const std::string& text, json fallback) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

absl::Time TimeOr(const std::string& text, absl::Time fallback) {
  absl::StatusOr<absl::Time> t = ParseRfc3339(text);
  return t.ok() ? *t : fallback;
}

}  // namespace

RunRecord ledger_sql::DecodeRow(const Statement& s) {
  RunRecord r;
  int c = 0;
  RunStart& st = r.start;
  st.id = s.ColText(c++);
  st.stage = s.ColText(c++);
  st.pipeline = s.ColText(c++);
  for (const json& arg : ParseJsonColumn(s.ColText(c++), json::array())) {
    if (arg.is_string()) st.command.push_back(arg.get<std::string>());
  }
  st.source = s.ColText(c++) == "discovered" ? RunSource::kDiscovered : RunSource::kLauncher;
  st.cgroup_path = s.ColText(c++);
  st.launcher_pid = s.OptInt(c++);
  st.start = TimeOr(s.ColText(c++), absl::UnixEpoch());
  const bool ended = !s.Null(c);
  const std::string end_text = s.ColText(c++);
  const std::string closed_by = s.ColText(c++);
  RunEnd end;
  end.end = TimeOr(end_text, st.start);
  end.closed_by = closed_by == "agent" ? RunCloser::kAgent : RunCloser::kLauncher;
  if (auto v = s.OptInt(c++)) end.exit_code = static_cast<int>(*v);
  if (auto v = s.OptInt(c++)) end.signal = static_cast<int>(*v);
  end.signal_requested = s.ColInt(c++) != 0;
  st.limits.memory_max_bytes = s.OptUint(c++);
  st.limits.memory_high_bytes = s.OptUint(c++);
  st.limits.cpu_max_cores = s.OptReal(c++);
  if (auto v = s.OptInt(c++)) st.limits.cpu_weight = static_cast<uint32_t>(*v);
  CgroupFacts& f = end.facts;
  f.memory_limit_bytes = s.OptUint(c++);
  f.memory_peak_bytes = s.OptUint(c++);
  f.memory_failcnt = s.OptUint(c++);
  f.memory_mean_bytes = s.OptUint(c++);
  f.memory_p95_bytes = s.OptUint(c++);
  f.near_limit_seconds = s.OptReal(c++);
  f.oom_kills_kernel = s.OptUint(c++);
  f.cpu_seconds = s.OptReal(c++);
  f.cpu_throttled_seconds = s.OptReal(c++);
  f.cpu_p95_cores = s.OptReal(c++);
  f.memory_pressure_seconds = s.OptReal(c++);
  f.cpu_pressure_seconds = s.OptReal(c++);
  if (ended) r.end = end;
  r.agent_observed = s.ColInt(c++) != 0;
  AgentFacts& a = r.agent;
  a.oom_kills_userspace = s.OptUint(c++);
  for (const json& v : ParseJsonColumn(s.ColText(c++), json::array())) {
    if (!v.is_object()) continue;
    a.oom_victims.push_back({v.value("pid", int64_t{0}), v.value("comm", ""),
                             v.value("kind", ""), v.value("killer", "")});
  }
  a.reclaim_stall_seconds = s.OptReal(c++);
  a.run_queue_wait_seconds = s.OptReal(c++);
  a.preemptors_observed = !s.Null(c);
  const json preemptors = ParseJsonColumn(s.ColText(c++), json::object());
  for (const auto& [stage, n] : preemptors.items()) {
    if (n.is_number_unsigned()) a.preemptors[stage] = n.get<uint64_t>();
  }
  a.anomalies_observed = !s.Null(c);
  for (const json& v : ParseJsonColumn(s.ColText(c++), json::array())) {
    if (!v.is_object()) continue;
    a.anomalies.push_back({v.value("name", ""), TimeOr(v.value("at", ""), st.start),
                           v.value("detail", "")});
  }
  a.saw_end = s.ColInt(c++) != 0;
  const std::optional<double> throttled_wall = s.OptReal(c++);
  if (r.end) r.end->facts.cpu_throttled_wall_seconds = throttled_wall;
  a.run_queue_throttled_seconds = s.OptReal(c++);
  return r;
}

namespace {

// Run `open` (as read from the ledger) with `end`, as its row reads back once EndRun wrote it:
// the verdict stored with the end is then the one a reader of the row gets. Every figure
// JudgeRun reads is stored exactly (integers, REAL doubles) but the end's time, which the
// ledger keeps to the millisecond; the limits of the end facts are the row's, not the end's.
RunRecord AsStored(RunRecord open, const RunEnd& end) {
  open.end = end;
  open.end->end = TimeOr(FormatRfc3339(end.end), open.start.start);
  open.end->facts.limits.reset();
  return open;
}

std::optional<uint64_t> AddOpt(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  return b ? std::optional<uint64_t>(*a + *b) : a;
}
std::optional<double> AddOpt(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  return b ? std::optional<double>(*a + *b) : a;
}

}  // namespace

std::string_view RunSourceName(RunSource source) {
  return source == RunSource::kDiscovered ? "discovered" : "launcher";
}

int Ledger::SchemaVersion() { return static_cast<int>(LedgerMigrations().size()); }

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path,
                                                     const RunsConfig& judging) {
  return OpenAs(path, /*read_only=*/false, judging);
}

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::OpenForReading(const std::string& path,
                                                               const RunsConfig& judging) {
  return OpenAs(path, /*read_only=*/true, judging);
}

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::OpenAs(const std::string& path, bool read_only,
                                                       const RunsConfig& judging) {
  std::unique_ptr<Ledger> ledger(new Ledger(path, read_only, judging));
  if (absl::Status s = ledger->Connect(); !s.ok()) return s;
  return ledger;
}

Ledger::Ledger(std::string path, bool read_only, const RunsConfig& judging)
    : path_(std::move(path)), read_only_(read_only), judging_(judging),
      judged_with_(VerdictJudgedWith(judging)) {}

absl::Status Ledger::Connect() {
  absl::Status s = ConnectOrFail();
  if (!s.ok()) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
  return s;
}

absl::Status Ledger::ConnectOrFail() {
  const std::string& path = path_;
  const bool read_only = read_only_;
  absl::StatusOr<std::string> file = LedgerFileToOpen(path, read_only);
  if (!file.ok()) return file.status();
  // NOFOLLOW: a link put in the ledger's place after the check above is refused too (SQLite
  // opens its -wal and -shm files without following links whatever the flags).
  int rc = sqlite3_open_v2(file->c_str(), &db_,
                           (read_only ? SQLITE_OPEN_READONLY
                                      : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                               SQLITE_OPEN_NOFOLLOW,
                           nullptr);
  sqlite3* const db = db_;
  auto fail = [](absl::StatusCode code, const std::string& message) {
    return absl::Status(code, message);
  };
  if (rc != SQLITE_OK) {
    return fail(absl::StatusCode::kFailedPrecondition,
                absl::StrFormat("cannot open the ledger \"%s\": %s; pass --ledger.path a "
                                "%s file", path, SqliteError(db), read_only ? "readable" : "writable"));
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  sqlite3_extended_result_codes(db, 0);
  // SQLite's default page cache (2 MB a connection) fills as the ledger grows and stays full
  // in a long-lived agent; every lookup is by index, and a page it misses is read again from
  // the OS's page cache.
  sqlite3_exec(db, absl::StrCat("PRAGMA cache_size=-", kPageCacheKib).c_str(), nullptr, nullptr,
               nullptr);

  // Only reads until the file is known to be a ledger (or empty), so nothing else is touched.
  int64_t app_id = 0, tables = 0, version = 0;
  rc = QueryInt(db, "PRAGMA application_id", app_id);
  if (rc == SQLITE_OK) rc = QueryInt(db, "SELECT count(*) FROM sqlite_master", tables);
  if (rc == SQLITE_OK) rc = QueryInt(db, "PRAGMA user_version", version);
  if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) {
    return fail(absl::StatusCode::kFailedPrecondition,
                absl::StrFormat("\"%s\" is not a stagewatch ledger (%s); it was left untouched: "
                                "pass --ledger.path another file", path, SqliteError(db)));
  }
  if (rc != SQLITE_OK) {
    return fail(absl::StatusCode::kFailedPrecondition,
                absl::StrFormat("cannot read the ledger \"%s\": %s", path, SqliteError(db)));
  }
  const bool fresh = app_id == 0 && tables == 0;
  if (!fresh && app_id != kLedgerApplicationId) {
    return fail(absl::StatusCode::kFailedPrecondition,
                absl::StrFormat("\"%s\" is an SQLite database but not a stagewatch ledger "
                                "(application_id %d, %d schema objects); it was left untouched: "
                                "pass --ledger.path another file", path, app_id, tables));
  }
  if (version > SchemaVersion()) {
    return fail(absl::StatusCode::kFailedPrecondition,
                absl::StrFormat("the ledger \"%s\" has schema version %d, newer than this "
                                "stagewatch's %d; upgrade stagewatch", path, version,
                                SchemaVersion()));
  }
  if (!fresh) {
    sqlite3_stmt* check = nullptr;
    std::string result = "";
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &check, nullptr) == SQLITE_OK &&
        sqlite3_step(check) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(check, 0));
    } else {
      result = SqliteError(db);
    }
    sqlite3_finalize(check);
    if (result != "ok") {
      return fail(absl::StatusCode::kDataLoss,
                  absl::StrFormat("the ledger \"%s\" is corrupt (%s); it was left untouched: "
                                  "keep it for recovery (sqlite3 .recover) and pass "
                                  "--ledger.path a new file", path, result));
    }
  }

  sqlite3_update_hook(db, &Ledger::OnRowChange, this);
  sqlite3_commit_hook(db, &Ledger::OnCommit, this);
  sqlite3_rollback_hook(db, &Ledger::OnRollback, this);
  if (read_only) {
    if (fresh || version < SchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the ledger \"%s\" has schema version %d and this stagewatch reads %d; any "
          "`stagewatch run` with write access migrates it", path, version, SchemaVersion()));
    }
    return absl::OkStatus();
  }
  // Keep the -wal file when the last writer closes, so users who may only read the ledger can
  // open it (SQLite cannot make the file for them in a directory they may not write).
  int persist = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  {
    Statement mode(db, "PRAGMA journal_mode=WAL");
    if (mode.Step() != SQLITE_ROW || mode.ColText(0) != "wal") {
      return absl::FailedPreconditionError(absl::StrFormat(
          "cannot switch the ledger \"%s\" to WAL mode: %s; pass --ledger.path a file on a "
          "local, writable filesystem", path, SqliteError(db)));
    }
  }
  // FULL: a committed run survives a power cut too, not only a crash of the process. A size
  // limit of 0 truncates the kept -wal file once it is checkpointed, so no stale frames stay.
  if (absl::Status s = Exec("PRAGMA synchronous=FULL; PRAGMA journal_size_limit=0"); !s.ok()) {
    return s;
  }
  if (absl::Status s = Migrate(); !s.ok()) return s;
  return JudgeUnjudgedRows();
}

Ledger::~Ledger() { sqlite3_close(db_); }

void Ledger::OnRowChange(void* self, int, const char*, const char*, sqlite3_int64) {
  static_cast<Ledger*>(self)->changed_ = true;
}

int Ledger::OnCommit(void* self) {
  Ledger& ledger = *static_cast<Ledger*>(self);
  if (std::exchange(ledger.changed_, false)) ledger.commits_++;
  return 0;  // go on with the commit
}

void Ledger::OnRollback(void* self) { static_cast<Ledger*>(self)->changed_ = false; }

absl::Status Ledger::BeginBatch() {
  // While the path cannot be reopened every write fails on its own (the watcher logged why
  // once); a batch of them is nothing, not an error at every pass.
  if (!Writable().ok()) return absl::OkStatus();
  if (!sqlite3_get_autocommit(db_)) {
    return absl::FailedPreconditionError("a ledger batch is open already");
  }
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrFormat("cannot start a ledger batch in \"%s\": %s", path_, SqliteError(db_)));
}

absl::Status Ledger::CommitBatch() {
  // SQLite rolls a transaction back by itself on some errors (a full disk): nothing to commit.
  if (sqlite3_get_autocommit(db_)) return absl::OkStatus();
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) {
    return absl::OkStatus();
  }
  absl::Status s = absl::InternalError(
      absl::StrFormat("cannot commit a ledger batch to \"%s\": %s", path_, SqliteError(db_)));
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  return s;
}

absl::Status Ledger::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) {
    return absl::OkStatus();
  }
  absl::Status status = absl::InternalError(
      absl::StrFormat("ledger \"%s\": %s", path_, error ? error : SqliteError(db_)));
  sqlite3_free(error);
  return status;
}

absl::Status Ledger::Migrate() {
  const auto& migrations = LedgerMigrations();
  for (;;) {
    Transaction tx(db_);
    if (absl::Status s = tx.begun(); !s.ok()) return s;
    int64_t version = 0;  // read inside the transaction: another process may have migrated
    if (QueryInt(db_, "PRAGMA user_version", version) != SQLITE_OK) {
      return absl::InternalError(absl::StrCat("cannot read the ledger's schema version: ",
                                              SqliteError(db_)));
    }
    if (version >= static_cast<int64_t>(migrations.size())) return absl::OkStatus();
    if (absl::Status s = Exec(std::string(migrations[version])); !s.ok()) return s;
    if (absl::Status s = Exec(absl::StrFormat("PRAGMA user_version=%d; PRAGMA application_id=%d",
                                              version + 1, kLedgerApplicationId));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = tx.Commit(); !s.ok()) return s;
  }
}

absl::Status Ledger::BeginRun(const RunStart& st) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  json command = st.command;
  Statement s(db_,
              "INSERT INTO runs (id, stage, pipeline, command, source, cgroup_path, launcher_pid, "
              "start_time, limit_memory_max_bytes, limit_memory_high_bytes, limit_cpu_max_cores, "
              "limit_cpu_weight, verdict, verdict_judged_with) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)");
  s.Text(st.id).Text(st.stage).Text(st.pipeline).Text(JsonText(command))
      .Text(std::string(RunSourceName(st.source))).Text(st.cgroup_path).Int(st.launcher_pid)
      .Text(FormatRfc3339(st.start)).Uint(st.limits.memory_max_bytes)
      .Uint(st.limits.memory_high_bytes).Real(st.limits.cpu_max_cores)
      .Int(st.limits.cpu_weight ? std::optional<int64_t>(*st.limits.cpu_weight) : std::nullopt)
      .Text(judged_with_);
  const int rc = s.Step();
  if (rc == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "run id \"%s\" is in the ledger \"%s\" already; pick another --run-id, or leave it out "
        "to get a new one", st.id, path_));
  }
  return s.status(absl::StrFormat("cannot record run \"%s\" in the ledger \"%s\"", st.id, path_));
}

absl::Status Ledger::EndRun(const std::string& id, const RunEnd& end) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  // The end and the verdict it gives are one write.
  Transaction tx(db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  absl::StatusOr<std::optional<RunRecord>> existing = Get(id);
  if (!existing.ok()) return existing.status();
  if (!*existing) return absl::NotFoundError(absl::StrFormat("no run \"%s\" in the ledger", id));
  if ((*existing)->end) {
    return absl::FailedPreconditionError(absl::StrFormat("run \"%s\" has ended already", id));
  }
  const std::string verdict(
      VerdictName(JudgeRun(AsStored(**std::move(existing), end), judging_).kind));
  const CgroupFacts& f = end.facts;
  // A discovered run's limits go in the same statement as its end: one write, so no crash
  // or failed write leaves the run ended without them, and a batch stays one transaction.
  // The kernel's memory limit at the end stands for memory.max: exact at rmdir, else the last
  // sample's.
  const bool limits = f.limits.has_value();
  const RunLimits l = limits ? *f.limits : RunLimits{};
  auto limit = [](const char* column) {
    return absl::StrFormat("%s = CASE WHEN ? AND source = 'discovered' THEN ? ELSE %s END",
                           column, column);
  };
  Statement s(db_, absl::StrCat(
              "UPDATE runs SET end_time = ?, closed_by = ?, exit_code = ?, signal = ?, "
              "signal_requested = ?, memory_limit_bytes = ?, memory_peak_bytes = ?, "
              "memory_failcnt = ?, memory_mean_bytes = ?, memory_p95_bytes = ?, "
              "near_limit_seconds = ?, oom_kills_kernel = ?, cpu_seconds = ?, "
              "cpu_throttled_seconds = ?, cpu_p95_cores = ?, memory_pressure_seconds = ?, "
              "cpu_pressure_seconds = ?, cpu_throttled_wall_seconds = ?, verdict = ?, "
              "verdict_judged_with = ?, ",
              limit("limit_memory_max_bytes"), ", ", limit("limit_memory_high_bytes"), ", ",
              limit("limit_cpu_max_cores"), ", ", limit("limit_cpu_weight"),
              " WHERE id = ? AND end_time IS NULL"));
  s.Text(FormatRfc3339(end.end))
      .Text(end.closed_by == RunCloser::kAgent ? "agent" : "launcher")
      .Int(end.exit_code).Int(end.signal).Int(end.signal_requested ? 1 : 0)
      .Uint(f.memory_limit_bytes).Uint(f.memory_peak_bytes).Uint(f.memory_failcnt)
      .Uint(f.memory_mean_bytes).Uint(f.memory_p95_bytes).Real(f.near_limit_seconds)
      .Uint(f.oom_kills_kernel).Real(f.cpu_seconds).Real(f.cpu_throttled_seconds)
      .Real(f.cpu_p95_cores).Real(f.memory_pressure_seconds).Real(f.cpu_pressure_seconds)
      .Real(f.cpu_throttled_wall_seconds).Text(verdict).Text(judged_with_)
      .Int(limits ? 1 : 0).Uint(f.memory_limit_bytes)
      .Int(limits ? 1 : 0).Uint(l.memory_high_bytes)
      .Int(limits ? 1 : 0).Real(l.cpu_max_cores)
      .Int(limits ? 1 : 0).Int(l.cpu_weight ? std::optional<int64_t>(*l.cpu_weight) : std::nullopt)
      .Text(id);
  s.Step();
  if (absl::Status st = s.status(absl::StrFormat("cannot end run \"%s\"", id)); !st.ok()) return st;
  if (sqlite3_changes(db_) != 1) {
    return absl::InternalError(absl::StrFormat("run \"%s\" was not ended", id));
  }
  return tx.Commit();
}

absl::Status Ledger::AddAgentFacts(const std::string& id, const AgentFacts& add) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  Transaction tx(db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  absl::StatusOr<std::optional<RunRecord>> existing = Get(id);
  if (!existing.ok()) return existing.status();
  if (!*existing) return absl::NotFoundError(absl::StrFormat("no run \"%s\" in the ledger", id));
  AgentFacts a = (*existing)->agent;
  a.oom_kills_userspace = AddOpt(a.oom_kills_userspace, add.oom_kills_userspace);
  a.oom_victims.insert(a.oom_victims.end(), add.oom_victims.begin(), add.oom_victims.end());
  a.reclaim_stall_seconds = AddOpt(a.reclaim_stall_seconds, add.reclaim_stall_seconds);
  a.run_queue_wait_seconds = AddOpt(a.run_queue_wait_seconds, add.run_queue_wait_seconds);
  a.run_queue_throttled_seconds =
      AddOpt(a.run_queue_throttled_seconds, add.run_queue_throttled_seconds);
  for (const auto& [stage, n] : add.preemptors) a.preemptors[stage] += n;
  a.preemptors_observed |= add.preemptors_observed || !add.preemptors.empty();
  a.anomalies.insert(a.anomalies.end(), add.anomalies.begin(), add.anomalies.end());
  a.anomalies_observed |= add.anomalies_observed || !add.anomalies.empty();
  a.saw_end |= add.saw_end;

  json preemptors = json::object();
  for (const auto& [stage, n] : a.preemptors) preemptors[stage] = n;
  RunRecord merged = **std::move(existing);  // as the row reads back after this write
  merged.agent = a;
  merged.agent_observed = true;
  Statement s(db_,
              "UPDATE runs SET agent_observed = 1, oom_kills_userspace = ?, oom_victims = ?, "
              "reclaim_stall_seconds = ?, run_queue_wait_seconds = ?, "
              "run_queue_throttled_seconds = ?, preemptors = ?, anomalies = ?, "
              "agent_saw_end = ?, verdict = ?, verdict_judged_with = ? WHERE id = ?");
  s.Uint(a.oom_kills_userspace).Text(JsonText(VictimsJson(a.oom_victims)))
      .Real(a.reclaim_stall_seconds).Real(a.run_queue_wait_seconds)
      .Real(a.run_queue_throttled_seconds)
      .OptText(a.preemptors_observed ? std::optional<std::string>(JsonText(preemptors))
                                     : std::nullopt)
      .OptText(a.anomalies_observed
                   ? std::optional<std::string>(JsonText(AnomaliesJson(a.anomalies)))
                   : std::nullopt)
      .Int(a.saw_end ? 1 : 0)
      .Text(std::string(VerdictName(JudgeRun(merged, judging_).kind)))
      .Text(judged_with_)
      .Text(id);
  s.Step();
  if (absl::Status st = s.status(absl::StrFormat("cannot add agent facts to run \"%s\"", id));
      !st.ok()) {
    return st;
  }
  return tx.Commit();
}

absl::Status Ledger::JudgeUnjudgedRows() {
  // In slices of their own transaction, so that other writers wait a moment at most. The
  // ranges around the rules' prefix use the index runs_by_judged_start: no scan when none.
  constexpr int kSlice = 2000;
  const std::string rules = absl::StrCat(kVerdictRules, ":");
  const std::string after_rules = absl::StrCat(kVerdictRules, ";");  // ';' follows ':'
  for (;;) {
    Transaction tx(db_);
    if (absl::Status s = tx.begun(); !s.ok()) return s;
    Statement rows(db_, absl::StrCat(
                            "SELECT ", kColumns, ", rowid FROM runs WHERE verdict_judged_with IS "
                            "NULL OR verdict_judged_with < ? OR verdict_judged_with >= ? LIMIT ",
                            kSlice));
    rows.Text(rules).Text(after_rules);
    Statement update(db_, "UPDATE runs SET verdict = ?, verdict_judged_with = ? WHERE rowid = ?");
    const int rowid_column = rows.Columns() - 1;
    int judged = 0;
    for (; rows.Step() == SQLITE_ROW; ++judged) {
      update.Reset()
          .Text(std::string(VerdictName(JudgeRun(DecodeRow(rows), judging_).kind)))
          .Text(judged_with_)
          .Int(rows.ColInt(rowid_column))
          .Step();
      if (absl::Status s = update.status("cannot store a run's verdict"); !s.ok()) return s;
    }
    if (absl::Status s = rows.status("cannot read the runs to judge"); !s.ok()) return s;
    if (absl::Status s = tx.Commit(); !s.ok()) return s;
    if (judged < kSlice) return absl::OkStatus();
  }
}

absl::Status Ledger::AddSamples(const std::string& id, const std::vector<RunSample>& samples) {
  if (samples.empty()) return absl::OkStatus();
  if (absl::Status s = Writable(); !s.ok()) return s;
  Transaction tx(db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  if (absl::Status s = InsertSamples(id, samples); !s.ok()) return s;
  return tx.Commit();
}

struct Ledger::SampleStatements {
  explicit SampleStatements(sqlite3* db)
      : insert(db,
               "INSERT INTO run_samples (run_id, at_ms, memory_bytes, memory_limit_bytes, "
               "cpu_cores, memory_pressure, cpu_pressure) VALUES (?, ?, ?, ?, ?, ?, ?)"),
        count(db, "SELECT count(*) FROM run_samples WHERE run_id = ?") {}
  Statement insert, count;
};

absl::Status Ledger::AddSamplesOfRuns(
    const std::map<std::string, std::vector<RunSample>>& samples) {
  if (samples.empty()) return absl::OkStatus();
  if (absl::Status s = Writable(); !s.ok()) return s;
  Transaction tx(db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  // Prepared once for every run of the write (the discovered runs' points come all at once).
  SampleStatements statements(db_);
  for (const auto& [id, points] : samples) {
    if (absl::Status s = InsertSamples(id, points, statements); !s.ok()) return s;
  }
  return tx.Commit();
}

absl::Status Ledger::InsertSamples(const std::string& id, const std::vector<RunSample>& samples) {
  SampleStatements statements(db_);
  return InsertSamples(id, samples, statements);
}

absl::Status Ledger::InsertSamples(const std::string& id, const std::vector<RunSample>& samples,
                                   SampleStatements& statements) {
  for (const RunSample& p : samples) {
    Statement& s = statements.insert.Reset();
    s.Text(id).Int(absl::ToUnixMillis(p.at)).Uint(p.memory_bytes).Uint(p.memory_limit_bytes)
        .Real(p.cpu_cores).Real(p.memory_pressure).Real(p.cpu_pressure);
    s.Step();
    if (absl::Status st = s.status(absl::StrFormat("cannot add samples to run \"%s\"", id));
        !st.ok()) {
      return st;
    }
  }
  int64_t count = 0;
  Statement& n = statements.count.Reset();
  n.Text(id);
  if (n.Step() == SQLITE_ROW) count = n.ColInt(0);
  if (count > kMaxSamplesPerRun) {
    // Thin to the first point in each of kMaxSamplesPerRun / 2 equal slices of the run's time
    // so far, and its last point: even over the whole run, however often it was thinned.
    Statement thin(db_,
                   "DELETE FROM run_samples WHERE rowid IN (SELECT id FROM (SELECT s.rowid AS id, "
                   "s.at_ms AS at_ms, b.t1 AS t1, row_number() OVER (PARTITION BY (s.at_ms - "
                   "b.t0) * ?2 / (b.t1 - b.t0 + 1) ORDER BY s.at_ms, s.rowid) AS k FROM "
                   "run_samples s, (SELECT min(at_ms) AS t0, max(at_ms) AS t1 FROM run_samples "
                   "WHERE run_id = ?1) b WHERE s.run_id = ?1) WHERE k > 1 AND at_ms < t1)");
    thin.Text(id).Int(kMaxSamplesPerRun / 2);
    thin.Step();
    if (absl::Status st = thin.status("cannot thin a run's samples"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunSample>> Ledger::Samples(const std::string& id) {
  Statement s(db_,
              "SELECT at_ms, memory_bytes, memory_limit_bytes, cpu_cores, memory_pressure, "
              "cpu_pressure FROM run_samples WHERE run_id = ? ORDER BY at_ms, rowid");
  s.Text(id);
  std::vector<RunSample> out;
  while (s.Step() == SQLITE_ROW) {
    out.push_back({absl::FromUnixMillis(s.ColInt(0)), s.OptUint(1), s.OptUint(2), s.OptReal(3),
                   s.OptReal(4), s.OptReal(5)});
  }
  if (absl::Status st = s.status(absl::StrFormat("cannot read the ledger \"%s\"", path_));
      !st.ok()) {
    return st;
  }
  return out;
}

absl::StatusOr<std::vector<RunRecord>> Ledger::Query(const std::string& where,
                                                     const std::vector<std::string>& args,
                                                     const std::string& tail) {
  Statement s(db_, absl::StrCat("SELECT ", kColumns, " FROM runs", where.empty() ? "" : " WHERE ",
                                where, " ", tail));
  for (const std::string& arg : args) s.Text(arg);
  std::vector<RunRecord> out;
  while (s.Step() == SQLITE_ROW) out.push_back(DecodeRow(s));
  if (absl::Status st = s.status(absl::StrFormat("cannot read the ledger \"%s\"", path_)); !st.ok()) {
    return st;
  }
  return out;
}

absl::StatusOr<std::optional<RunRecord>> Ledger::Get(const std::string& id) {
  absl::StatusOr<std::vector<RunRecord>> rows = Query("id = ?", {id}, "");
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::nullopt;
  return std::move(rows->front());
}

absl::StatusOr<std::optional<RunRecord>> Ledger::FindNewestByCgroup(
    const std::string& cgroup_path) {
  absl::StatusOr<std::vector<RunRecord>> rows =
      Query("cgroup_path = ?", {cgroup_path}, "ORDER BY start_time DESC LIMIT 1");
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::nullopt;
  return std::move(rows->front());
}

absl::Status Ledger::WithdrawRun(const std::string& id) {
  Transaction tx(db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  Statement samples(db_, "DELETE FROM run_samples WHERE run_id = ?");
  samples.Text(id).Step();
  if (absl::Status s = samples.status("cannot withdraw the run's points"); !s.ok()) return s;
  Statement run(db_, "DELETE FROM runs WHERE id = ? AND end_time IS NULL");
  run.Text(id).Step();
  if (absl::Status s = run.status(absl::StrFormat("cannot withdraw run \"%s\"", id)); !s.ok()) {
    return s;
  }
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrFormat("no open run \"%s\" in the ledger", id));
  }
  return tx.Commit();
}

}  // namespace stagewatch
