// Paths the ledger is never opened at: a symbolic link (to an empty file, dangling, or as the
// ledger's -wal or -shm file) and a directory every user may write. Each is refused with what
// to do, and nothing is created or written, at the link's target or anywhere else.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/agent_presence.h"
#include "runs/ledger.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::Started;
using testing::TempDir;

namespace fs = std::filesystem;

// Every file beneath `dir`, links included, as paths relative to it.
std::set<std::string> FilesIn(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out.insert(e.path().lexically_relative(dir).string());
  }
  return out;
}

class LedgerPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(ledger_dir_);
    fs::create_directory(elsewhere_);
  }
  // Both openings refuse `path`, saying `why` and `what_to_do`.
  void ExpectRefused(const std::string& path, const std::string& why,
                     const std::string& what_to_do = "--ledger.path") {
    absl::StatusOr<std::unique_ptr<Ledger>> writer = Ledger::Open(path);
    ASSERT_FALSE(writer.ok());
    EXPECT_EQ(writer.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(writer.status().message(), HasSubstr(why));
    EXPECT_THAT(writer.status().message(), HasSubstr(what_to_do));
    absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(path);
    ASSERT_FALSE(reader.ok());
    EXPECT_THAT(reader.status().message(), HasSubstr(why));
  }

  TempDir dir_;
  const std::string ledger_dir_ = dir_.file("state");
  const std::string elsewhere_ = dir_.file("elsewhere");  // where links point
};

TEST_F(LedgerPathTest, ALinkToAnEmptyFileIsRefusedAndTheFileStaysEmpty) {
  const std::string target = elsewhere_ + "/passwd";
  std::ofstream(target).close();
  const std::string link = ledger_dir_ + "/ledger.db";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ExpectRefused(link, "is a symbolic link (to " + target + ")");
  EXPECT_EQ(fs::file_size(target), 0u);
  EXPECT_EQ(FilesIn(dir_.path()),
            (std::set<std::string>{"elsewhere", "elsewhere/passwd", "state", "state/ledger.db"}))
      << "no -wal or -shm file anywhere";
}

TEST_F(LedgerPathTest, ADanglingLinkIsRefusedAndNothingIsCreatedWhereItPoints) {
  const std::string link = ledger_dir_ + "/ledger.db";
  ASSERT_EQ(symlink("../elsewhere/new.db", link.c_str()), 0);
  ExpectRefused(link, "which does not exist");
  EXPECT_EQ(FilesIn(dir_.path()),
            (std::set<std::string>{"elsewhere", "state", "state/ledger.db"}));
}

TEST_F(LedgerPathTest, ALinkAsTheWalOrShmFileIsRefusedAndItsTargetNeverMade) {
  const std::string path = ledger_dir_ + "/ledger.db";
  {
    auto ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->BeginRun(Started("r1", "s", At(0))).ok());
  }
  for (const std::string suffix : {"-wal", "-shm"}) {
    fs::remove(path + suffix);
    ASSERT_EQ(symlink((elsewhere_ + "/x" + suffix).c_str(), (path + suffix).c_str()), 0);
    ExpectRefused(path, "\"" + path + suffix + "\" is a symbolic link", "remove the link");
    EXPECT_TRUE(fs::is_empty(elsewhere_)) << suffix;
    fs::remove(path + suffix);
  }
}

// The check runs before SQLite opens the file; a link put in place between the two is refused
// by SQLite itself (it opens the ledger with SQLITE_OPEN_NOFOLLOW, the -wal and -shm files with
// O_NOFOLLOW): the same link handed to SQLite directly, as the ledger opens it, is refused.
TEST_F(LedgerPathTest, SQLiteItselfRefusesALinkWithTheLedgersFlags) {
  const std::string link = ledger_dir_ + "/ledger.db";
  ASSERT_EQ(symlink("../elsewhere/new.db", link.c_str()), 0);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(link.c_str(), &db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                            nullptr),
            SQLITE_CANTOPEN);
  sqlite3_close(db);
  EXPECT_TRUE(fs::is_empty(elsewhere_));
}

TEST_F(LedgerPathTest, ADirectoryEveryUserMayWriteIsRefusedEvenSticky) {
  for (mode_t mode : {0777, 01777, 0703}) {
    ASSERT_EQ(chmod(ledger_dir_.c_str(), mode), 0);
    ExpectRefused(ledger_dir_ + "/ledger.db", "may be written by every user");
    EXPECT_TRUE(fs::is_empty(ledger_dir_)) << std::oct << mode;
  }
}

TEST_F(LedgerPathTest, AGroupWritableDirectoryAndALinkAmongTheDirectoriesAreFine) {
  ASSERT_EQ(chmod(ledger_dir_.c_str(), 02770), 0);  // launchers and the agent share a group
  const std::string via = dir_.file("via");  // a link to the directory, not to the ledger
  ASSERT_EQ(symlink(ledger_dir_.c_str(), via.c_str()), 0);
  {
    auto ledger = Ledger::Open(via + "/ledger.db");
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    ASSERT_TRUE((*ledger)->BeginRun(Started("r1", "s", At(0))).ok());
  }
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(ledger_dir_ + "/ledger.db")));
  auto reader = Ledger::OpenForReading(via + "/ledger.db");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE(*(*reader)->Get("r1"));
}

TEST_F(LedgerPathTest, TheAgentsLockBesideTheLedgerIsNotMadeThroughALink) {
  const std::string ledger = ledger_dir_ + "/ledger.db";
  ASSERT_EQ(symlink("../elsewhere/lock", (ledger + ".agent").c_str()), 0);
  EXPECT_FALSE(AgentPresence::Announce(ledger).ok());
  EXPECT_FALSE(AgentPresence::Announced(ledger));
  EXPECT_TRUE(fs::is_empty(elsewhere_));
}

}  // namespace
}  // namespace stagewatch
