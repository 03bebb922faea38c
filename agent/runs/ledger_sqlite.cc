#include "runs/ledger_sqlite.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "string_util.h"

namespace stagewatch::ledger_sqlite {

absl::Status SqlError(std::string_view what, const SQLite::Exception& e) {
  return absl::InternalError(absl::StrCat(ToAbsl(what), ": ", e.what()));
}

WriteTransaction::WriteTransaction(SQLite::Database& db) : db_(db) {
  try {
    if (sqlite3_get_autocommit(db.getHandle())) {
      transaction_.emplace(db, SQLite::TransactionBehavior::IMMEDIATE);
    } else {
      savepoint_.emplace(db, "part");
    }
  } catch (const SQLite::Exception& e) {
    begun_ = absl::UnavailableError(absl::StrCat("cannot start a ledger transaction: ", e.what()));
  }
}

WriteTransaction::~WriteTransaction() {
  if (!savepoint_ || committed_) return;  // a transaction rolls itself back
  // Rolled back and also released, so that a batch's failed writes leave no savepoint behind.
  try {
    savepoint_->rollback();
    db_.exec("RELEASE part");
  } catch (const SQLite::Exception&) {
    // The batch was rolled back already (SQLite does so by itself on a full disk).
  }
}

absl::Status WriteTransaction::Commit() {
  committed_ = true;
  try {
    if (transaction_) {
      transaction_->commit();
    } else if (savepoint_) {
      savepoint_->release();
    }
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    return absl::InternalError(absl::StrCat("cannot commit to the ledger: ", e.what()));
  }
}

}  // namespace stagewatch::ledger_sqlite
