// What the ledger's source files (ledger*.cc), and nothing else, add to SQLiteCpp: its
// exceptions as statuses, optional values bound and read as NULL, and a write's transaction.
#pragma once

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Savepoint.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace stagewatch::ledger_sqlite {

// Internal: "what: SQLite's message".
absl::Status SqlError(std::string_view what, const SQLite::Exception& e);

// Binds `args` to the statement's `?`s in order (1-based). An empty optional binds NULL;
// integers of every width (bool too) bind as SQLite's 64-bit integer.
inline void BindOne(SQLite::Statement& s, int i, const std::string& v) { s.bind(i, v); }
inline void BindOne(SQLite::Statement& s, int i, double v) { s.bind(i, v); }
template <std::integral T>
void BindOne(SQLite::Statement& s, int i, T v) {
  s.bind(i, static_cast<int64_t>(v));
}
template <typename T>
void BindOne(SQLite::Statement& s, int i, const std::optional<T>& v) {
  if (v) {
    BindOne(s, i, *v);
  } else {
    s.bind(i);
  }
}
template <typename... Args>
void BindAll(SQLite::Statement& s, const Args&... args) {
  int i = 0;
  (BindOne(s, ++i, args), ...);
}

// A column's value, or nullopt for NULL.
inline std::optional<int64_t> OptInt(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<int64_t>(c.getInt64());
}
inline std::optional<uint64_t> OptUint(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(c.getInt64()));
}
inline std::optional<double> OptReal(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<double>(c.getDouble());
}
inline std::optional<std::string> OptText(const SQLite::Column& c) {
  return c.isNull() ? std::nullopt : std::optional<std::string>(c.getText());
}

// One write, all or nothing. Outside a batch, BEGIN IMMEDIATE takes the write lock at once, so a
// busy ledger waits in busy_timeout rather than failing half-way. Within a batch
// (Ledger::BeginBatch) it is a savepoint: its writes reach the file with the batch. Rolled back
// unless committed.
class WriteTransaction {
 public:
  explicit WriteTransaction(SQLite::Database& db);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  absl::Status begun() const { return begun_; }
  absl::Status Commit();

 private:
  SQLite::Database& db_;
  std::optional<SQLite::Transaction> transaction_;
  std::optional<SQLite::Savepoint> savepoint_;  // within a batch
  absl::Status begun_;
  bool committed_ = false;
};

}  // namespace stagewatch::ledger_sqlite
