// The run ledger's file through the built binary: `stagewatch run` refuses (125) a ledger path
// that is a link or lies in a directory every user may write, and touches nothing; a ledger
// removed under a running agent or launcher is made anew and the runs land there, once; the
// launcher's closing line shows the ledger's control characters escaped.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::AgentProcess;
using testing::TestCgroup;
using testing::WaitUntil;

namespace fs = std::filesystem;

class LedgerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    char tmpl[] = "/tmp/stagewatch-ledger-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ledger_ = dir_ + "/ledger.db";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::set<std::string> Files() const {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      out.insert(e.path().lexically_relative(dir_).string());
    }
    return out;
  }

  std::optional<RunRecord> Run(const std::string& id) {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
    if (!ledger.ok()) return std::nullopt;
    absl::StatusOr<std::optional<RunRecord>> run = (*ledger)->Get(id);
    return run.ok() ? *run : std::nullopt;
  }

  std::string dir_;
  std::string ledger_;
};

TEST_F(LedgerE2E, RunRefusesALinkOrAnOpenDirectoryWith125AndTouchesNothing) {
  TestCgroup parent("ledger-e2e-refuse");
  std::ofstream(dir_ + "/empty").close();
  ASSERT_EQ(symlink("empty", (dir_ + "/to-empty.db").c_str()), 0);
  ASSERT_EQ(symlink("nothing-here.db", (dir_ + "/dangling.db").c_str()), 0);
  fs::create_directory(dir_ + "/open");
  ASSERT_EQ(chmod((dir_ + "/open").c_str(), 01777), 0);
  const std::set<std::string> before = Files();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir_ + "/to-empty.db", "is a symbolic link"},
      {dir_ + "/dangling.db", "which does not exist"},
      {dir_ + "/open/ledger.db", "may be written by every user"},
  };
  for (const auto& [path, why] : cases) {
    AgentProcess run({"run", "--stage", "swrefused", "--ledger.path", path, "--cgroup.parent",
                      parent.path(), "--", "touch", dir_ + "/ran"});
    EXPECT_EQ(run.WaitExit(30000), 125) << run.log();
    EXPECT_THAT(run.log(), HasSubstr("stagewatch run: "));
    EXPECT_THAT(run.log(), HasSubstr(why));
    EXPECT_THAT(run.log(), HasSubstr("--ledger.path"));
  }
  EXPECT_EQ(Files(), before) << "no ledger, -wal or -shm made, and the command never ran";
  EXPECT_EQ(fs::file_size(dir_ + "/empty"), 0u);
  EXPECT_FALSE(fs::exists(parent.dir() + "/stagewatch")) << "no cgroup left behind";
}

// `rm ledger.db ledger.db-wal ledger.db-shm` under a running agent: the agent says so, makes
// the ledger anew, and a launcher run started then is in the new file once, as a launcher run;
// the removed file is not written again.
TEST_F(LedgerE2E, AnAgentWhoseLedgerIsRemovedRecordsTheNextRunInANewOneOnce) {
  TestCgroup parent("ledger-e2e-removed", {"cpu", "cpuacct", "pressure"});
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger_});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(ledger_ + "-wal"); }, 10000));
  const int old_db = open(ledger_.c_str(), O_RDONLY | O_CLOEXEC);
  const int old_wal = open((ledger_ + "-wal").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(old_db, 0);
  ASSERT_GE(old_wal, 0);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(ledger_ + suffix);

  AgentProcess launcher({"run", "--stage", "swremoved", "--run-id", "after-rm-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "0.3"});
  ASSERT_EQ(launcher.WaitExit(30000), 0) << launcher.log();
  auto noticed = [&] {
    return agent.log().find("the run ledger was removed or replaced") != std::string::npos;
  };
  ASSERT_TRUE(WaitUntil(noticed, 10000)) << agent.log();
  auto written = [](int fd) {
    struct stat st {};
    fstat(fd, &st);
    return std::make_tuple(st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  };
  const auto db_at_notice = written(old_db), wal_at_notice = written(old_wal);

  std::optional<RunRecord> run;
  ASSERT_TRUE(WaitUntil([&] { return (run = Run("after-rm-1")) && run->agent.saw_end; }, 15000))
      << "the agent's end facts did not reach the new ledger\n" << agent.log();
  EXPECT_EQ(run->start.source, RunSource::kLauncher);
  EXPECT_EQ(run->end->closed_by, RunCloser::kLauncher);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_);
  ASSERT_TRUE(ledger.ok());
  const absl::StatusOr<std::vector<RunRecord>> all = (*ledger)->List({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u) << "the run was recorded twice (as discovered too)";
  EXPECT_THAT(launcher.log(), Not(HasSubstr("removed or replaced while the run ran")));

  absl::SleepFor(absl::Milliseconds(1500));  // more passes of the agent
  EXPECT_EQ(written(old_db), db_at_notice) << "the removed ledger was written after the notice";
  EXPECT_EQ(written(old_wal), wal_at_notice) << "the removed -wal was written after the notice";
  close(old_db);
  close(old_wal);
}

// The same under a launcher alone: the run's end goes to the ledger at the path when it ends.
TEST_F(LedgerE2E, ALauncherWhoseLedgerIsRemovedEndsItsRunInTheNewOne) {
  TestCgroup parent("ledger-e2e-launcher", {"cpu", "cpuacct", "pressure"});
  AgentProcess launcher({"run", "--stage", "swmoved", "--run-id", "moved-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "1.5"});
  ASSERT_TRUE(WaitUntil([&] { return Run("moved-1").has_value(); }, 15000)) << launcher.log();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(ledger_ + suffix);
  ASSERT_EQ(launcher.WaitExit(30000), 0) << launcher.log();
  EXPECT_THAT(launcher.log(), HasSubstr("the ledger was removed or replaced while the run ran"));
  std::optional<RunRecord> run = Run("moved-1");
  ASSERT_TRUE(run) << launcher.log();
  ASSERT_TRUE(run->end);
  EXPECT_EQ(run->end->exit_code, 0);
  EXPECT_EQ(run->start.command, (std::vector<std::string>{"sleep", "1.5"}));
}

TEST_F(LedgerE2E, TheLaunchersClosingLineShowsControlCharactersEscaped) {
  TestCgroup parent("ledger-e2e-escape", {"cpu", "cpuacct", "pressure"});
  AgentProcess launcher({"run", "--stage", "swescape", "--run-id", "esc-1", "--ledger.path",
                         ledger_, "--cgroup.parent", parent.path(), "--", "sleep", "1"});
  ASSERT_TRUE(WaitUntil([&] { return Run("esc-1").has_value(); }, 15000)) << launcher.log();
  {
    // A user-space OOM killer whose name holds an escape sequence (a comm is any 15 bytes).
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_);
    ASSERT_TRUE(ledger.ok());
    AgentFacts facts;
    facts.oom_kills_userspace = 1;
    facts.oom_victims.push_back({1, "sleep", "userspace", "k\x1b]0;x\x07\x1b[2J"});
    ASSERT_TRUE((*ledger)->AddAgentFacts("esc-1", facts).ok());
  }
  launcher.WaitExit(30000);
  const std::string printed = launcher.log();
  EXPECT_THAT(printed, HasSubstr("killed by a user-space OOM killer by k\\x1b]0;x\\x07\\x1b[2J"));
  EXPECT_EQ(printed.find('\x1b'), std::string::npos) << printed;
  EXPECT_EQ(printed.find('\x07'), std::string::npos) << printed;
}

}  // namespace
}  // namespace stagewatch
