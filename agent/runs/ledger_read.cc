// A run's row looked up by id or by cgroup (the lists are ledger_list.cc's).
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {

absl::StatusOr<std::vector<RunRecord>> Ledger::Query(const std::string& where,
                                                     const std::vector<std::string>& args,
                                                     const std::string& tail) {
  std::vector<RunRecord> out;
  try {
    SQLite::Statement s(*db_, absl::StrCat("SELECT ", ledger_row::kColumns, " FROM runs",
                                           where.empty() ? "" : " WHERE ", where, " ", tail));
    for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i) + 1, args[i]);
    while (s.executeStep()) out.push_back(ledger_row::DecodeRow(s));
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
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

}  // namespace stagewatch
