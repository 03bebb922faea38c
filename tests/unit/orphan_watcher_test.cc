// The agent closing runs whose launcher died while their command ran on, on a real SQLite
// ledger with a directory tree standing in for the keyed hierarchy (a cgroup's tasks in its
// cgroup.procs) and real processes as launchers: at the kernel's time of the last task's exit
// when populated flips come, when last known alive otherwise, and at startup.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cgroup_event_for.h"
#include "gtest/gtest.h"
#include "runs/run_watcher.h"
#include "runs_test_util.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TempDir;

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A launcher stand-in: a child process that lives until killed.
pid_t LiveLauncher() {
  const pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

// The pid of a process that has exited and been reaped.
pid_t DeadLauncher() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

class OrphanWatcherTest : public ::testing::Test {
 protected:
  OrphanWatcherTest() : stages_({}, DiscoveryConfig{}), ledger_path_(dir_.file("ledger.db")) {
    root_ = dir_.file("cgroupfs");
    mkdir(root_.c_str(), 0755);
    layout_.key_root = layout_.v2_root = root_;  // one cgroup2 hierarchy
  }

  std::unique_ptr<RunWatcher> Start(bool populated_events) {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    absl::StatusOr<std::unique_ptr<RunWatcher>> w = RunWatcher::Start(
        *std::move(ledger), &stages_,
        {.key_root = root_, .layout = layout_, .populated_events = populated_events,
         .orphan_sweep = absl::Milliseconds(50), .oom_observed = true,
         .tick = absl::Milliseconds(20)},
        {});
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  // A launcher's run begun `ago`, with its row, and its cgroup holding `tasks`.
  RunStart Launched(const std::string& id, pid_t launcher, absl::Duration ago,
                    const std::string& tasks) {
    RunStart s = testing::Started(id, "train", absl::Now() - ago);
    s.launcher_pid = launcher;
    EXPECT_TRUE((*Ledger::Open(ledger_path_))->BeginRun(s).ok());
    std::filesystem::create_directories(root_ + s.cgroup_path);
    SetTasks(s, tasks);
    return s;
  }
  void SetTasks(const RunStart& s, const std::string& tasks) {
    std::ofstream(root_ + s.cgroup_path + "/cgroup.procs") << tasks;
  }
  cgroup_event Event(int kind, const RunStart& s, uint64_t at_ns = 0) {
    struct stat st;
    stat((root_ + s.cgroup_path).c_str(), &st);
    cgroup_event e = testing::CgroupEventFor(kind, st.st_ino, s.cgroup_path);
    e.at_ns = at_ns;
    return e;
  }
  RunRecord Row(const std::string& id) {
    absl::StatusOr<std::optional<RunRecord>> r = (*Ledger::OpenForReading(ledger_path_))->Get(id);
    EXPECT_TRUE(r.ok() && *r) << id;
    return r.ok() && *r ? **r : RunRecord{};
  }
  bool Ended(const std::string& id) {
    return testing::WaitUntil([&] { return Row(id).end.has_value(); }, 5000);
  }

  TempDir dir_;
  StageResolver stages_;
  std::string ledger_path_;
  std::string root_;
  CgroupLayout layout_;
};

// The launcher lives on a moment after its command ended, then dies before closing the run:
// the run ends when its last task exited, not when the agent noticed the launcher gone.
TEST_F(OrphanWatcherTest, AnUnpopulatedFlipEndsTheRunOfADeadLauncherAtTheLastTasksExit) {
  const pid_t launcher = LiveLauncher();  // started before its run, as a launcher is
  const RunStart run = Launched("orphan-1", launcher, absl::ZeroDuration(), "4242\n");
  auto watcher = Start(/*populated_events=*/true);
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_MKDIR, run));
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_POPULATED, run, MonotonicNs()));
  absl::SleepFor(absl::Milliseconds(300));
  SetTasks(run, "");
  const absl::Time exited = absl::Now() - absl::Milliseconds(100);
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_UNPOPULATED, run, MonotonicNs() - 100'000'000));
  watcher->Flush();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(Row("orphan-1").end) << "its launcher lives: it closes its own";

  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  ASSERT_TRUE(Ended("orphan-1"));
  const RunRecord r = Row("orphan-1");
  EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
  EXPECT_NEAR(absl::ToDoubleSeconds(r.end->end - exited), 0, 0.02);
  EXPECT_TRUE(r.agent.saw_end) << "the agent watched it end";
}

// A launcher dead before its command ended: closed the moment the command's last task exits.
TEST_F(OrphanWatcherTest, ARunOfALauncherDeadAlreadyIsClosedAtItsUnpopulatedFlip) {
  const RunStart run = Launched("orphan-2", DeadLauncher(), absl::Seconds(3), "4242\n");
  auto watcher = Start(/*populated_events=*/true);
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_MKDIR, run));
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_POPULATED, run, MonotonicNs() - 2'900'000'000));
  watcher->Flush();
  absl::SleepFor(absl::Milliseconds(100));  // ticks and the first sweep: its task is there
  EXPECT_FALSE(Row("orphan-2").end);
  SetTasks(run, "");
  const absl::Time exited = absl::Now() - absl::Milliseconds(500);
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_UNPOPULATED, run, MonotonicNs() - 500'000'000));
  watcher->Flush();
  const RunRecord r = Row("orphan-2");
  ASSERT_TRUE(r.end) << "closed at the flip, not at a later tick";
  EXPECT_NEAR(absl::ToDoubleSeconds(r.end->end - exited), 0, 0.02);
}

// Without populated flips (an older kernel): a sweep finds it, and it ends when it was last
// known alive, its newest point in the ledger, however late the sweep comes.
TEST_F(OrphanWatcherTest, WithoutFlipsASweepEndsItWhenLastKnownAlive) {
  const RunStart run = Launched("orphan-3", DeadLauncher(), absl::Seconds(10), "4242\n");
  const absl::Time last_point = run.start + absl::Seconds(6);
  ASSERT_TRUE((*Ledger::Open(ledger_path_))
                  ->AddSamples(run.id, {{.at = run.start + absl::Seconds(2)}, {.at = last_point}})
                  .ok());
  auto watcher = Start(/*populated_events=*/false);
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_MKDIR, run));
  watcher->Flush();
  absl::SleepFor(absl::Milliseconds(150));  // sweeps every 50 ms: its task is there
  EXPECT_FALSE(Row("orphan-3").end);
  SetTasks(run, "");
  ASSERT_TRUE(Ended("orphan-3"));
  const RunRecord r = Row("orphan-3");
  EXPECT_EQ(absl::ToUnixMillis(r.end->end), absl::ToUnixMillis(last_point));
  EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
}

// Launcher runs left open while no agent ran: the one whose command has ended too is closed at
// startup, when last known alive (its start: it has no points); the one still running is not.
TEST_F(OrphanWatcherTest, AtStartARunOfADeadLauncherWithAnEmptyCgroupIsClosed) {
  const RunStart ended = Launched("left-1", DeadLauncher(), absl::Minutes(5), "");
  const RunStart running = Launched("left-2", DeadLauncher(), absl::Minutes(5), "4242\n");
  auto watcher = Start(/*populated_events=*/true);
  const RunRecord r = Row("left-1");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(absl::ToUnixMillis(r.end->end), absl::ToUnixMillis(ended.start));
  EXPECT_FALSE(Row("left-2").end);
  // Its command ends later: the flip closes it.
  SetTasks(running, "");
  watcher->OnCgroupEvent(Event(CGROUP_EVENT_UNPOPULATED, running, MonotonicNs()));
  EXPECT_TRUE(Ended("left-2"));
}

// The launcher died and its pid went to a process started after the run began: that process
// is not the launcher, and the run (its cgroup gone) is closed.
TEST_F(OrphanWatcherTest, AProcessThatReusedTheLaunchersPidDoesNotKeepItsRunOpen) {
  const pid_t stranger = LiveLauncher();  // started now, a minute after the run
  RunStart run = testing::Started("reused-1", "train", absl::Now() - absl::Minutes(1));
  run.launcher_pid = stranger;
  ASSERT_TRUE((*Ledger::Open(ledger_path_))->BeginRun(run).ok());
  auto watcher = Start(/*populated_events=*/true);
  const RunRecord r = Row("reused-1");
  kill(stranger, SIGKILL);
  waitpid(stranger, nullptr, 0);
  ASSERT_TRUE(r.end) << "closed at startup";
  EXPECT_EQ(absl::ToUnixMillis(r.end->end), absl::ToUnixMillis(run.start));
}

}  // namespace
}  // namespace stagewatch
