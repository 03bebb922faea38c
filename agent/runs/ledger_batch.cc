// Commits: many writes in one (a batch), and the count of those that changed rows (SQLite's
// hooks).
#include <sqlite3.h>

#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {

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
  if (!sqlite3_get_autocommit(db_->getHandle())) {
    return absl::FailedPreconditionError("a ledger batch is open already");
  }
  batch_.reset();  // one SQLite rolled back by itself (see CommitBatch)
  try {
    batch_ = std::make_unique<SQLite::Transaction>(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    return absl::UnavailableError(
        absl::StrFormat("cannot start a ledger batch in \"%s\": %s", path_, e.what()));
  }
}

absl::Status Ledger::CommitBatch() {
  // SQLite rolls a transaction back by itself on some errors (a full disk): nothing to commit.
  std::unique_ptr<SQLite::Transaction> batch = std::move(batch_);
  if (!batch || sqlite3_get_autocommit(db_->getHandle())) return absl::OkStatus();
  try {
    batch->commit();
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    // `batch` rolls back as it goes.
    return absl::InternalError(
        absl::StrFormat("cannot commit a ledger batch to \"%s\": %s", path_, e.what()));
  }
}

}  // namespace stagewatch
