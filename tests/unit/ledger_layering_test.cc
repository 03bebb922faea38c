// The ledger talks to SQLite through SQLiteCpp (statements, transactions, errors), not through
// a wrapper of its own; the C API is used only for what SQLiteCpp does not offer (hooks, file
// controls, the autocommit state). And its files stay small, one job each.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "source_scan.h"

namespace stagewatch {
namespace {

using testing::SourceFiles;
using testing::SourceText;

TEST(LedgerLayeringTest, StatementsAndTransactionsGoThroughSqliteCpp) {
  const std::vector<std::string> wrapped = {
      "sqlite3_open", "sqlite3_prepare", "sqlite3_step",  "sqlite3_bind_", "sqlite3_column_",
      "sqlite3_exec", "sqlite3_finalize", "sqlite3_close", "sqlite3_errmsg"};
  const std::vector<std::string> files = SourceFiles("agent");
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    const std::string text = SourceText(file);
    for (const std::string& call : wrapped) {
      EXPECT_EQ(text.find(call), std::string::npos)
          << file << " calls " << call << "; use SQLiteCpp (runs/ledger_sqlite.h) instead";
    }
  }
}

TEST(LedgerLayeringTest, EachLedgerFileIsSmall) {
  constexpr int kMaxLines = 250;
  int ledger_files = 0;
  for (const std::string& file : SourceFiles("agent/runs")) {
    if (!file.starts_with("agent/runs/ledger")) continue;
    ++ledger_files;
    const std::string text = SourceText(file);
    const auto lines = std::count(text.begin(), text.end(), '\n');
    EXPECT_LE(lines, kMaxLines) << file << ": split it by job";
  }
  EXPECT_GE(ledger_files, 8);
}

}  // namespace
}  // namespace stagewatch
