// Opening the ledger: the path checked (LedgerFileToOpen), the file checked before anything is
// written to it, then set up for crash-safe writes and migrated (ledger_migrate.cc).
#include <sqlite3.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_path.h"
#include "runs/ledger_schema.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {
namespace {

constexpr int kBusyTimeoutMs = 10000;
constexpr int kPageCacheKib = 256;

absl::Status Refused(const std::string& message) {
  return absl::FailedPreconditionError(message);
}

}  // namespace

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

Ledger::~Ledger() = default;

absl::Status Ledger::Connect() {
  absl::Status s = ConnectOrFail();
  if (!s.ok()) db_.reset();
  return s;
}

absl::Status Ledger::ConnectOrFail() {
  const std::string& path = path_;
  const bool read_only = read_only_;
  absl::StatusOr<std::string> file = LedgerFileToOpen(path, read_only);
  if (!file.ok()) return file.status();
  try {
    // NOFOLLOW: a link put in the ledger's place after the check above is refused too (SQLite
    // opens its -wal and -shm files without following links whatever the flags).
    db_ = std::make_unique<SQLite::Database>(
        *file,
        (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
            SQLITE_OPEN_NOFOLLOW,
        kBusyTimeoutMs);
  } catch (const SQLite::Exception& e) {
    return Refused(absl::StrFormat("cannot open the ledger \"%s\": %s; pass --ledger.path a %s "
                                   "file", path, e.what(), read_only ? "readable" : "writable"));
  }
  sqlite3* const db = db_->getHandle();
  sqlite3_extended_result_codes(db, 0);
  // SQLite's default page cache (2 MB a connection) fills as the ledger grows and stays full
  // in a long-lived agent; every lookup is by index, and a page it misses is read again from
  // the OS's page cache.
  db_->tryExec(absl::StrCat("PRAGMA cache_size=-", kPageCacheKib));

  // Only reads until the file is known to be a ledger (or empty), so nothing else is touched.
  int64_t app_id = 0, tables = 0, version = 0;
  try {
    app_id = db_->execAndGet("PRAGMA application_id").getInt64();
    tables = db_->execAndGet("SELECT count(*) FROM sqlite_master").getInt64();
    version = db_->execAndGet("PRAGMA user_version").getInt64();
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_NOTADB || e.getErrorCode() == SQLITE_CORRUPT) {
      return Refused(absl::StrFormat("\"%s\" is not a stagewatch ledger (%s); it was left "
                                     "untouched: pass --ledger.path another file", path,
                                     e.what()));
    }
    return Refused(absl::StrFormat("cannot read the ledger \"%s\": %s", path, e.what()));
  }
  const bool fresh = app_id == 0 && tables == 0;
  if (!fresh && app_id != kLedgerApplicationId) {
    return Refused(absl::StrFormat("\"%s\" is an SQLite database but not a stagewatch ledger "
                                   "(application_id %d, %d schema objects); it was left "
                                   "untouched: pass --ledger.path another file", path, app_id,
                                   tables));
  }
  if (version > SchemaVersion()) {
    return Refused(absl::StrFormat("the ledger \"%s\" has schema version %d, newer than this "
                                   "stagewatch's %d; upgrade stagewatch", path, version,
                                   SchemaVersion()));
  }
  if (!fresh) {
    std::string result;
    try {
      SQLite::Statement check(*db_, "PRAGMA quick_check");
      result = check.executeStep() ? check.getColumn(0).getText() : db_->getErrorMsg();
    } catch (const SQLite::Exception& e) {
      result = e.what();
    }
    if (result != "ok") {
      return absl::DataLossError(
          absl::StrFormat("the ledger \"%s\" is corrupt (%s); it was left untouched: keep it for "
                          "recovery (sqlite3 .recover) and pass --ledger.path a new file",
                          path, result));
    }
  }

  sqlite3_update_hook(db, &Ledger::OnRowChange, this);
  sqlite3_commit_hook(db, &Ledger::OnCommit, this);
  sqlite3_rollback_hook(db, &Ledger::OnRollback, this);
  if (read_only) {
    if (fresh || version < SchemaVersion()) {
      return Refused(absl::StrFormat(
          "the ledger \"%s\" has schema version %d and this stagewatch reads %d; any "
          "`stagewatch run` with write access migrates it", path, version, SchemaVersion()));
    }
    return absl::OkStatus();
  }
  // Keep the -wal file when the last writer closes, so users who may only read the ledger can
  // open it (SQLite cannot make the file for them in a directory they may not write).
  int persist = 1;
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  std::string not_wal;
  try {
    SQLite::Statement mode(*db_, "PRAGMA journal_mode=WAL");
    if (!mode.executeStep() || mode.getColumn(0).getString() != "wal") {
      not_wal = db_->getErrorMsg();
    }
  } catch (const SQLite::Exception& e) {
    not_wal = e.what();
  }
  if (!not_wal.empty()) {
    return Refused(absl::StrFormat("cannot switch the ledger \"%s\" to WAL mode: %s; pass "
                                   "--ledger.path a file on a local, writable filesystem",
                                   path, not_wal));
  }
  // FULL: a committed run survives a power cut too, not only a crash of the process. A size
  // limit of 0 truncates the kept -wal file once it is checkpointed, so no stale frames stay.
  if (absl::Status s = Exec("PRAGMA synchronous=FULL; PRAGMA journal_size_limit=0"); !s.ok()) {
    return s;
  }
  if (absl::Status s = Migrate(); !s.ok()) return s;
  return JudgeUnjudgedRows();
}

}  // namespace stagewatch
