// A ledger removed or replaced under a long-lived writer or reader (`rm ledger.db*` while the
// agent runs): noticed by one stat, and the path opened again, so that nothing more is written
// to, or read from, a file nobody else sees.
#include <sqlite3.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/ledger.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {
namespace {

using ledger_sqlite::SqlError;
using ledger_sqlite::WriteTransaction;

// Binds `value` as it is, of whichever type it is.
void BindAsIs(SQLite::Statement& s, int i, const SQLite::Column& value) {
  switch (value.getType()) {
    case SQLITE_INTEGER: s.bind(i, value.getInt64()); break;
    case SQLITE_FLOAT: s.bind(i, value.getDouble()); break;
    case SQLITE_TEXT: s.bind(i, value.getString()); break;
    case SQLITE_BLOB: s.bind(i, value.getBlob(), value.getBytes()); break;
    default: s.bind(i);
  }
}

// Copies the rows of `table` where `key` = `id` from `from` into `to`, every column as it is
// (both files have this build's schema).
absl::Status CopyRows(SQLite::Database& from, SQLite::Database& to, const char* table,
                      const char* key, const std::string& id, int& copied) {
  std::string failed = absl::StrCat("cannot read the removed ledger's ", table);
  try {
    SQLite::Statement rows(from, absl::StrFormat("SELECT * FROM %s WHERE %s = ?", table, key));
    rows.bind(1, id);
    std::unique_ptr<SQLite::Statement> insert;
    for (copied = 0; rows.executeStep(); ++copied) {
      failed = absl::StrCat("cannot copy a row of ", table);
      if (!insert) {
        std::vector<std::string> names;
        for (int c = 0; c < rows.getColumnCount(); ++c) names.push_back(rows.getColumnName(c));
        insert = std::make_unique<SQLite::Statement>(
            to, absl::StrFormat("INSERT INTO %s (%s) VALUES (%s)", table,
                                absl::StrJoin(names, ", "),
                                absl::StrJoin(std::vector<std::string>(names.size(), "?"), ", ")));
      }
      insert->reset();
      insert->clearBindings();
      for (int c = 0; c < rows.getColumnCount(); ++c) BindAsIs(*insert, c + 1, rows.getColumn(c));
      insert->exec();
      failed = absl::StrCat("cannot read the removed ledger's ", table);
    }
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    return SqlError(failed, e);
  }
}

}  // namespace

bool Ledger::Replaced() const {
  // SQLite's unix VFS compares the path's inode with the open file's.
  int moved = 0;
  return sqlite3_file_control(db_->getHandle(), "main", SQLITE_FCNTL_HAS_MOVED, &moved) ==
             SQLITE_OK &&
         moved != 0;
}

absl::StatusOr<bool> Ledger::ReopenIfReplaced(const std::vector<RunStart>& carry) {
  if (!Replaced()) return false;
  if (!sqlite3_get_autocommit(db_->getHandle())) {
    return absl::FailedPreconditionError("the ledger cannot be reopened within a batch");
  }
  batch_.reset();  // one SQLite rolled back by itself, on the removed file
  std::unique_ptr<SQLite::Database> removed = std::move(db_);
  if (absl::Status s = Connect(); !s.ok()) {
    db_ = std::move(removed);
    lost_ = absl::FailedPreconditionError(absl::StrFormat(
        "the ledger \"%s\" was removed or replaced, and cannot be opened again: %s", path_,
        s.message()));
    return lost_;
  }
  lost_ = absl::OkStatus();
  absl::Status carried;
  if (!carry.empty()) {
    WriteTransaction tx(*db_);  // one commit for all of them
    carried = tx.begun();
    for (const RunStart& start : carry) {
      if (!carried.ok()) break;
      carried = CarryRun(*removed, start);
    }
    if (carried.ok()) carried = tx.Commit();
  }
  // No checkpoint of the removed -wal into the removed file: writes nobody would read (SQLite
  // skips it by itself for a file that moved; said here for every version).
  sqlite3_db_config(removed->getHandle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  removed.reset();
  if (!carried.ok()) {
    return absl::InternalError(absl::StrFormat(
        "the ledger \"%s\" was removed or replaced and is open again, but the runs open in "
        "this process could not all be carried over: %s", path_, carried.message()));
  }
  return true;
}

absl::Status Ledger::CarryRun(SQLite::Database& from, const RunStart& start) {
  absl::StatusOr<std::optional<RunRecord>> there = Get(start.id);
  if (!there.ok()) return there.status();
  if (*there) return absl::OkStatus();  // another writer carried it, or began it anew
  WriteTransaction part(*db_);  // a savepoint: the row and its points, or nothing
  if (absl::Status s = part.begun(); !s.ok()) return s;
  int rows = 0, points = 0;
  if (absl::Status s = CopyRows(from, *db_, "runs", "id", start.id, rows); !s.ok()) return s;
  if (rows == 0) {
    if (absl::Status s = BeginRun(start); !s.ok()) return s;
  } else if (absl::Status s = CopyRows(from, *db_, "run_samples", "run_id", start.id, points);
             !s.ok()) {
    return s;
  }
  return part.Commit();
}

}  // namespace stagewatch
