// The ledger talks to SQLite through SQLiteCpp (statements, transactions, errors), not through
// a wrapper of its own; the C API is used only for what SQLiteCpp does not offer (hooks, file
// controls, the autocommit state). And its files stay small, one job each.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const std::filesystem::path kAgent = std::filesystem::path(STAGEWATCH_SOURCE_DIR) / "agent";

std::string Read(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << "cannot read " << file;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::filesystem::path> Sources(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".h" || ext == ".cc") files.push_back(entry.path());
  }
  return files;
}

TEST(LedgerLayeringTest, StatementsAndTransactionsGoThroughSqliteCpp) {
  const std::vector<std::string> wrapped = {
      "sqlite3_open", "sqlite3_prepare", "sqlite3_step",  "sqlite3_bind_", "sqlite3_column_",
      "sqlite3_exec", "sqlite3_finalize", "sqlite3_close", "sqlite3_errmsg"};
  const std::vector<std::filesystem::path> files = Sources(kAgent);
  ASSERT_FALSE(files.empty());
  for (const std::filesystem::path& file : files) {
    const std::string text = Read(file);
    for (const std::string& call : wrapped) {
      EXPECT_EQ(text.find(call), std::string::npos)
          << file << " calls " << call << "; use SQLiteCpp (runs/ledger_sqlite.h) instead";
    }
  }
}

TEST(LedgerLayeringTest, EachLedgerFileIsSmall) {
  constexpr int kMaxLines = 250;
  int ledger_files = 0;
  for (const std::filesystem::path& file : Sources(kAgent / "runs")) {
    if (!file.filename().string().starts_with("ledger")) continue;
    ++ledger_files;
    const std::string text = Read(file);
    const auto lines = std::count(text.begin(), text.end(), '\n');
    EXPECT_LE(lines, kMaxLines) << file << ": split it by job";
  }
  EXPECT_GE(ledger_files, 8);
}

}  // namespace
}  // namespace stagewatch
