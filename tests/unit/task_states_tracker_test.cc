#include "signals/memory/task_states_tracker.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

// A directory tree standing in for a v1 hierarchy (directory inodes are the ids), whose
// `tasks` files list real sleeping processes: the tracker reads their /proc states.
class TaskStatesTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-task-states-XXXXXX";
    root_ = mkdtemp(tmpl);
    for (int i = 0; i < 2; i++) {
      const pid_t pid = fork();
      if (pid == 0) {
        pause();
        _exit(0);
      }
      sleepers_.push_back(pid);
    }
  }
  void TearDown() override {
    for (pid_t pid : sleepers_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(root_);
  }

  // The cgroup at `path` (made if new) lists the first `count` sleepers.
  void List(const std::string& path, int count) {
    std::filesystem::create_directories(root_ + path);
    std::ofstream tasks(root_ + path + "/tasks", std::ios::trunc);
    for (int i = 0; i < count; i++) tasks << sleepers_[i] << "\n";
  }
  // Until both sleepers sleep: a /proc state read before then would be R.
  void WaitAsleep() {
    for (pid_t pid : sleepers_) {
      for (int i = 0; i < 500; i++) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string line((std::istreambuf_iterator<char>(stat)), {});
        if (line.find(") S ") != std::string::npos) break;
        usleep(10'000);
      }
    }
  }

  std::string root_;
  std::vector<pid_t> sleepers_;
};

uint64_t Sleeping(const TaskStatesTracker& tracker, StageId stage) {
  const auto counts = tracker.Counts(absl::Now());
  auto it = counts.find(stage);
  return it == counts.end() ? 0 : it->second.sleeping;
}

TEST_F(TaskStatesTrackerTest, APassIsSkippedOnlyWhileNoStageRanAndTheCgroupsAreTheSame) {
  List("/stagewatch/train", 1);
  WaitAsleep();
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  namer.Refresh();
  TaskStatesTracker tracker(/*iterator=*/nullptr, &namer, root_, absl::Seconds(5));
  const StageId train = stages.Resolve("/stagewatch/train").id;

  tracker.Collect(7);
  EXPECT_EQ(Sleeping(tracker, train), 1u);
  EXPECT_EQ(tracker.passes(), 1u);

  // Moved in by another process while asleep: no stage ran, the cgroups are the same.
  List("/stagewatch/train", 2);
  tracker.Collect(7);
  EXPECT_EQ(Sleeping(tracker, train), 1u) << "a pass with no stage run since the last";
  EXPECT_EQ(tracker.passes(), 1u);

  // A sample saw a stage's task run: counted again.
  tracker.Collect(8);
  EXPECT_EQ(Sleeping(tracker, train), 2u);
  EXPECT_EQ(tracker.passes(), 2u);

  // At most kMaxSkippedPasses in a row are skipped.
  List("/stagewatch/train", 1);
  for (int i = 0; i < TaskStatesTracker::kMaxSkippedPasses; i++) tracker.Collect(8);
  EXPECT_EQ(Sleeping(tracker, train), 2u);
  tracker.Collect(8);
  EXPECT_EQ(Sleeping(tracker, train), 1u) << "the pass after the skipped ones";
  EXPECT_EQ(tracker.passes(), 3u);

  // A cgroup made: the names change, counted again at once.
  List("/stagewatch/validate", 2);
  namer.Refresh();
  tracker.Collect(8);
  EXPECT_EQ(tracker.passes(), 4u);
  EXPECT_EQ(Sleeping(tracker, stages.Resolve("/stagewatch/validate").id), 2u);
}

}  // namespace
}  // namespace stagewatch
