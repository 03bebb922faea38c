// Whether a run's launcher lives, read from a /proc stand-in: a zombie is dead, and so is a
// process that got the launcher's pid after the run began. When a dead launcher's run was last
// known alive, from a real ledger.
#include "runs/orphan_runs.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::TempDir;

class LauncherAliveTest : public ::testing::Test {
 protected:
  // Writes <proc>/<pid>/stat for a process in `state` that started `age` ago.
  void Process(int pid, const std::string& comm, char state, absl::Duration age) {
    timespec boot{};
    clock_gettime(CLOCK_BOOTTIME, &boot);
    const double started = absl::ToDoubleSeconds(absl::DurationFromTimespec(boot) - age);
    const long ticks = static_cast<long>(started * sysconf(_SC_CLK_TCK));
    std::filesystem::create_directories(dir_.file(std::to_string(pid)));
    std::ofstream(dir_.file(std::to_string(pid) + "/stat"))
        << pid << " (" << comm << ") " << state
        << " 1 2 3 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 " << ticks
        << " 123456 200 18446744073709551615\n";
  }
  RunStart RunOf(int pid, absl::Duration ago) {
    RunStart s = testing::Started("r", "train", absl::Now() - ago);
    s.launcher_pid = pid;
    return s;
  }

  TempDir dir_;
};

TEST_F(LauncherAliveTest, ALauncherThatStartedBeforeItsRunIsAlive) {
  Process(4242, "stagewatch", 'S', absl::Seconds(10));
  EXPECT_TRUE(LauncherAlive(RunOf(4242, absl::Seconds(9)), dir_.path()));
  // Its command name may hold spaces and parentheses: fields count from the last ')'.
  Process(4243, "a) b (c", 'R', absl::Seconds(10));
  EXPECT_TRUE(LauncherAlive(RunOf(4243, absl::Seconds(9)), dir_.path()));
}

TEST_F(LauncherAliveTest, AZombieOrAMissingProcessIsDead) {
  Process(4242, "stagewatch", 'Z', absl::Seconds(10));
  EXPECT_FALSE(LauncherAlive(RunOf(4242, absl::Seconds(9)), dir_.path()));
  EXPECT_FALSE(LauncherAlive(RunOf(4244, absl::Seconds(9)), dir_.path()));
  RunStart none = RunOf(0, absl::Seconds(9));
  none.launcher_pid.reset();
  EXPECT_FALSE(LauncherAlive(none, dir_.path()));
}

// The launcher died and its pid went to a process started after the run: not the launcher.
TEST_F(LauncherAliveTest, AProcessThatGotThePidAfterTheRunBeganIsNotTheLauncher) {
  Process(4242, "python3", 'S', absl::Seconds(5));
  EXPECT_FALSE(LauncherAlive(RunOf(4242, absl::Seconds(60)), dir_.path()));
  // This test process itself, for a run it began now.
  EXPECT_TRUE(LauncherAlive(RunOf(getpid(), absl::ZeroDuration())));
}

TEST(LastKnownAliveTest, IsTheNewestOfTheRunsLastPointAndItsStart) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(dir.file("ledger.db"));
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  const absl::Time start = absl::Now() - absl::Minutes(10);
  RunStart run = testing::Started("r1", "train", start);
  ASSERT_TRUE((*ledger)->BeginRun(run).ok());
  EXPECT_EQ(LastKnownAlive(**ledger, run), start) << "no points: its start";
  const absl::Time last = start + absl::Seconds(7);
  ASSERT_TRUE((*ledger)->AddSamples("r1", {{.at = start + absl::Seconds(2)}, {.at = last}}).ok());
  EXPECT_EQ(absl::ToUnixMillis(LastKnownAlive(**ledger, run)), absl::ToUnixMillis(last));
}

}  // namespace
}  // namespace stagewatch
