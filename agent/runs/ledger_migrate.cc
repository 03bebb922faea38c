// A writer's last steps of opening the ledger: the schema migrated to this build's version, and
// the rows not judged yet, or judged under other rules, judged.
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_schema.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {

using ledger_row::DecodeRow;
using ledger_row::kColumns;
using ledger_sqlite::BindAll;
using ledger_sqlite::SqlError;
using ledger_sqlite::WriteTransaction;

absl::Status Ledger::Exec(const std::string& sql) {
  try {
    db_->exec(sql);
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    return absl::InternalError(absl::StrFormat("ledger \"%s\": %s", path_, e.what()));
  }
}

absl::Status Ledger::Migrate() {
  const auto& migrations = LedgerMigrations();
  for (;;) {
    WriteTransaction tx(*db_);
    if (absl::Status s = tx.begun(); !s.ok()) return s;
    int64_t version = 0;  // read inside the transaction: another process may have migrated
    try {
      version = db_->execAndGet("PRAGMA user_version").getInt64();
    } catch (const SQLite::Exception& e) {
      return SqlError("cannot read the ledger's schema version", e);
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

absl::Status Ledger::JudgeUnjudgedRows() {
  // In slices of their own transaction, so that other writers wait a moment at most. The
  // ranges around the rules' prefix use the index runs_by_judged_start: no scan when none.
  constexpr int kSlice = 2000;
  const std::string rules = absl::StrCat(kVerdictRules, ":");
  const std::string after_rules = absl::StrCat(kVerdictRules, ";");  // ';' follows ':'
  for (;;) {
    WriteTransaction tx(*db_);
    if (absl::Status s = tx.begun(); !s.ok()) return s;
    int judged = 0;
    const char* failed = "cannot read the runs to judge";
    try {
      SQLite::Statement rows(*db_, absl::StrCat("SELECT ", kColumns, ", rowid FROM runs WHERE "
                                                "verdict_judged_with IS NULL OR "
                                                "verdict_judged_with < ? OR "
                                                "verdict_judged_with >= ? LIMIT ", kSlice));
      BindAll(rows, rules, after_rules);
      const int rowid_column = rows.getColumnCount() - 1;
      failed = "cannot store a run's verdict";
      SQLite::Statement update(
          *db_, "UPDATE runs SET verdict = ?, verdict_judged_with = ? WHERE rowid = ?");
      for (failed = "cannot read the runs to judge"; rows.executeStep(); ++judged) {
        failed = "cannot store a run's verdict";
        update.reset();
        update.clearBindings();
        BindAll(update, std::string(VerdictName(JudgeRun(DecodeRow(rows), judging_).kind)),
                judged_with_, rows.getColumn(rowid_column).getInt64());
        update.exec();
        failed = "cannot read the runs to judge";
      }
    } catch (const SQLite::Exception& e) {
      return SqlError(failed, e);
    }
    if (absl::Status s = tx.Commit(); !s.ok()) return s;
    if (judged < kSlice) return absl::OkStatus();
  }
}

}  // namespace stagewatch
