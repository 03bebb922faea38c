// The run watcher on a real ledger removed under it (`rm ledger.db*`): at its next pass it says
// so, makes the ledger anew, carries the run it holds open over (its end lands there), and finds
// a launcher's row in the new file rather than recording that run a second time as discovered.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "cgroup_event_for.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "log.h"
#include "runs/run_watcher.h"
#include "runs_test_util.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

namespace fs = std::filesystem;

class RunWatcherReopenTest : public ::testing::Test {
 protected:
  RunWatcherReopenTest() : stages_({}, DiscoveryConfig{}), ledger_path_(dir_.file("ledger.db")) {
    root_ = dir_.file("cgroupfs");
    fs::create_directory(root_);
    Log::SetSink(&log_);
  }
  ~RunWatcherReopenTest() override { Log::SetSink(nullptr); }

  cgroup_event Mkdir(const std::string& path) {
    fs::create_directories(root_ + path);
    struct stat st;
    stat((root_ + path).c_str(), &st);
    return testing::CgroupEventFor(CGROUP_EVENT_MKDIR, st.st_ino, path);
  }
  cgroup_event Rmdir(const cgroup_event& made) {
    fs::remove_all(root_ + made.path);
    return testing::CgroupEventFor(CGROUP_EVENT_RMDIR, made.cgroup_id, made.path);
  }
  std::vector<RunRecord> Runs() {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path_);
    if (!ledger.ok()) return {};
    return (*ledger)->List({}).value_or(std::vector<RunRecord>{});
  }

  TempDir dir_;
  StageResolver stages_;
  std::string ledger_path_;
  std::string root_;
  std::ostringstream log_;
};

TEST_F(RunWatcherReopenTest, ALedgerRemovedUnderTheWatcherIsMadeAnewWithItsOpenRun) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  absl::StatusOr<std::unique_ptr<RunWatcher>> watcher = RunWatcher::Start(
      *std::move(ledger), &stages_,
      {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20)}, {});
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  // A discovered run, recorded once its grace has passed.
  const cgroup_event job = Mkdir("/stagewatch/train/job_1");
  (*watcher)->OnCgroupEvent(job);
  ASSERT_TRUE(testing::WaitUntil([&] { return Runs().size() == 1; }, 5000));

  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(ledger_path_ + suffix);
  ASSERT_TRUE(testing::WaitUntil([&] { return Runs().size() == 1; }, 5000))
      << "the open run was not carried into a new ledger";

  // A launcher's run, begun in the new file after the cgroup is made, as launchers do.
  const cgroup_event launched = Mkdir("/stagewatch/train/run-2");
  (*watcher)->OnCgroupEvent(launched);
  {
    auto launcher = *Ledger::Open(ledger_path_);
    RunStart start = testing::Started("run-2", "train", absl::Now());
    start.cgroup_path = "/stagewatch/train/run-2";
    start.launcher_pid = getpid();
    ASSERT_TRUE(launcher->BeginRun(start).ok());
  }
  absl::SleepFor(absl::Milliseconds(1200));  // past the grace a discovered run waits for
  (*watcher)->OnCgroupEvent(Rmdir(job));
  (*watcher)->OnCgroupEvent(Rmdir(launched));
  (*watcher)->Flush();

  watcher->reset();  // its log is read below
  EXPECT_THAT(log_.str(), HasSubstr("the run ledger was removed or replaced: reopened"));
  const std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 2u) << "a run doubled or lost:\n" << log_.str();
  for (const RunRecord& r : runs) {
    if (r.start.id == "job_1") {
      EXPECT_EQ(r.start.source, RunSource::kDiscovered);
      ASSERT_TRUE(r.end) << "its end went elsewhere";
      EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
    } else {
      EXPECT_EQ(r.start.id, "run-2");
      EXPECT_EQ(r.start.source, RunSource::kLauncher);
      EXPECT_TRUE(r.agent.saw_end) << "the agent's end facts went elsewhere";
    }
  }
}

}  // namespace
}  // namespace stagewatch
