// The ledger's SQL plumbing, shared by its source files (ledger*.cc) and by nothing else:
// prepared statements, transactions, and the row decoder.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runs/run_record.h"
#include "string_util.h"

namespace stagewatch::ledger_sql {

inline std::string SqliteError(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

// One prepared statement; parameters are bound by position (1-based), in the order of `?`s.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  absl::Status status(std::string_view what) const {
    if (rc_ == SQLITE_OK || rc_ == SQLITE_ROW || rc_ == SQLITE_DONE) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(ToAbsl(what), ": ", SqliteError(db_)));
  }

  Statement& Text(const std::string& v) {
    Check(sqlite3_bind_text(stmt_, ++n_, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& Int(std::optional<int64_t> v) {
    Check(v ? sqlite3_bind_int64(stmt_, ++n_, *v) : sqlite3_bind_null(stmt_, ++n_));
    return *this;
  }
  Statement& Uint(std::optional<uint64_t> v) {
    return Int(v ? std::optional<int64_t>(static_cast<int64_t>(*v)) : std::nullopt);
  }
  Statement& Real(std::optional<double> v) {
    Check(v ? sqlite3_bind_double(stmt_, ++n_, *v) : sqlite3_bind_null(stmt_, ++n_));
    return *this;
  }
  Statement& Value(sqlite3_value* v) {  // a value as another statement read it
    Check(sqlite3_bind_value(stmt_, ++n_, v));
    return *this;
  }
  Statement& OptText(const std::optional<std::string>& v) {
    if (v) return Text(*v);
    Check(sqlite3_bind_null(stmt_, ++n_));
    return *this;
  }

  // Ready to be bound and stepped again (a statement prepared once for many rows).
  Statement& Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    if (rc_ == SQLITE_ROW || rc_ == SQLITE_DONE) rc_ = SQLITE_OK;
    n_ = 0;
    return *this;
  }

  // SQLITE_ROW, SQLITE_DONE or an error code (kept for status()).
  int Step() {
    if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW) return rc_;
    rc_ = sqlite3_step(stmt_);
    return rc_;
  }

  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string ColText(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t ColInt(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<int64_t> OptInt(int col) const {
    return Null(col) ? std::nullopt : std::optional<int64_t>(ColInt(col));
  }
  std::optional<uint64_t> OptUint(int col) const {
    return Null(col) ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(ColInt(col)));
  }
  int Columns() const { return sqlite3_column_count(stmt_); }
  std::string ColName(int col) const { return sqlite3_column_name(stmt_, col); }
  sqlite3_value* ColValue(int col) const { return sqlite3_column_value(stmt_, col); }
  std::optional<double> OptReal(int col) const {
    return Null(col) ? std::nullopt : std::optional<double>(sqlite3_column_double(stmt_, col));
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) rc_ = rc;
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  int n_ = 0;
};

// BEGIN IMMEDIATE takes the write lock at once, so a busy ledger waits in busy_timeout rather
// than failing half-way. Rolled back unless committed. Within a batch (Ledger::BeginBatch) it is
// a savepoint: its writes stay all-or-nothing and reach the file with the batch.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db), nested_(!sqlite3_get_autocommit(db)) {
    ok_ = Run(nested_ ? "SAVEPOINT part" : "BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (ok_ && !done_) Run(nested_ ? "ROLLBACK TO part; RELEASE part" : "ROLLBACK");
  }
  absl::Status begun() const {
    return ok_ ? absl::OkStatus()
               : absl::UnavailableError(absl::StrCat("cannot start a ledger transaction: ",
                                                     SqliteError(db_)));
  }
  absl::Status Commit() {
    done_ = true;
    if (Run(nested_ ? "RELEASE part" : "COMMIT")) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot commit to the ledger: ", SqliteError(db_)));
  }

 private:
  bool Run(const char* sql) const {
    return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  sqlite3* db_;
  const bool nested_;
  bool ok_ = false;
  bool done_ = false;
};

// Runs a single-value query ("PRAGMA user_version"); the SQLite result code on failure.
inline int QueryInt(sqlite3* db, const char* sql, int64_t& out) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      out = sqlite3_column_int64(stmt, 0);
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(stmt);
  return rc;
}

// Every column of a run's row, in the order DecodeRow reads them.
inline constexpr char kColumns[] =
    "id, stage, pipeline, command, source, cgroup_path, launcher_pid, start_time, end_time, "
    "closed_by, exit_code, signal, signal_requested, limit_memory_max_bytes, "
    "limit_memory_high_bytes, limit_cpu_max_cores, limit_cpu_weight, memory_limit_bytes, "
    "memory_peak_bytes, memory_failcnt, memory_mean_bytes, memory_p95_bytes, near_limit_seconds, "
    "oom_kills_kernel, cpu_seconds, cpu_throttled_seconds, cpu_p95_cores, "
    "memory_pressure_seconds, cpu_pressure_seconds, agent_observed, oom_kills_userspace, "
    "oom_victims, reclaim_stall_seconds, run_queue_wait_seconds, preemptors, anomalies, "
    "agent_saw_end, cpu_throttled_wall_seconds, run_queue_throttled_seconds";

// A row selected with kColumns first.
RunRecord DecodeRow(const Statement& s);

}  // namespace stagewatch::ledger_sql
