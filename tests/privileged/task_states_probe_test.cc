// The task_states iterator against the running kernel: for a cgroup of threads in known
// states, its counts equal what /proc/<tid>/stat says of every thread whose /proc/<tid>/cgroup
// names that cgroup; and the /proc fallback counts the same live threads.
#include "signals/memory/task_states_probe.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "cgroup/proc_cgroup.h"
#include "signals/memory/task_state_source.h"
#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

std::vector<std::string> NumericEntries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(e->d_name, &n)) out.emplace_back(e->d_name);
  }
  closedir(d);
  return out;
}

// Ground truth from /proc alone: the state letter of every thread of the host whose
// /proc/<pid>/task/<tid>/cgroup puts it in `cgroup`, and of every zombie whose parent is
// there. (A zombie has left its cgroup's task list, and on cgroup v1 its /proc/<pid>/cgroup
// says "/" once it is exiting, kernel/cgroup/cgroup.c: proc_cgroup_show(); the kernel still
// holds it in the cgroup, which is where the iterator finds it.)
std::map<char, int> ProcTruth(const TestCgroup& cgroup) {
  struct Thread {
    bool inside = false;
    char state = 0;
    std::string ppid;
  };
  std::map<std::string, Thread> threads;
  for (const std::string& pid : NumericEntries("/proc")) {
    const std::string tasks = "/proc/" + pid + "/task";
    for (const std::string& tid : NumericEntries(tasks)) {
      const std::string dir = tasks + "/" + tid;
      absl::StatusOr<std::string> path =
          ParseProcCgroup(testing::ReadFile(dir + "/cgroup"), cgroup.layout().key);
      const std::string stat = testing::ReadFile(dir + "/stat");
      const size_t paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 4 >= stat.size()) continue;  // gone meanwhile
      Thread& t = threads[tid];
      t.inside = path.ok() && *path == cgroup.path();
      t.state = stat[paren + 2];
      t.ppid = stat.substr(paren + 4, stat.find(' ', paren + 4) - (paren + 4));
    }
  }
  std::map<char, int> states;
  for (const auto& [tid, t] : threads) {
    auto parent = threads.find(t.ppid);
    const bool zombie_child = t.state == 'Z' && parent != threads.end() && parent->second.inside;
    if (t.inside || zombie_child) states[t.state]++;
  }
  return states;
}

std::map<char, int> Letters(const TaskStateCounts& c) {
  std::map<char, int> m;
  // The letters the workload below makes, one per counter.
  if (c.runnable) m['R'] = c.runnable;
  if (c.sleeping) m['S'] = c.sleeping;
  if (c.uninterruptible) m['D'] = c.uninterruptible;
  if (c.stopped) m['T'] = c.stopped;
  if (c.zombie) m['Z'] = c.zombie;
  return m;
}

std::string Show(const std::map<char, int>& m) {
  std::string s;
  for (const auto& [letter, n] : m) s += std::string(1, letter) + "=" + std::to_string(n) + " ";
  return s;
}

// Threads in every state the iterator tells apart: 8 sleeping (2 processes, one of 4 threads,
// a vfork child, a parent that does not reap), 1 stopped, 1 uninterruptible (vfork's parent),
// 1 spinning, 1 zombie.
void StartWorkload(TestCgroup& cgroup) {
  for (int i = 0; i < 2; i++) cgroup.Spawn("sw-ti-sleep", [] { pause(); });
  cgroup.Spawn("sw-ti-threads", [] {
    for (int i = 0; i < 3; i++) std::thread([] { pause(); }).detach();
    pause();
  });
  ASSERT_GT(cgroup.SpawnStopped("sw-ti-stop"), 0);
  cgroup.SpawnUninterruptible("sw-ti-vfork");
  cgroup.Spawn("sw-ti-spin", [] { testing::BusyFor(std::chrono::milliseconds(20000)); });
  // A child that exits and is never reaped while its parent lives.
  cgroup.Spawn("sw-ti-reaper", [] {
    if (fork() == 0) _exit(0);
    pause();
  });
}

// Waits until /proc shows the workload, then until `count` agrees with /proc between two
// reads of it that agree with each other.
void ExpectCountsMatchProc(TestCgroup& cgroup, const std::map<char, int>& want,
                           const std::function<TaskStateCounts()>& count) {
  ASSERT_TRUE(testing::WaitUntil([&] { return ProcTruth(cgroup) == want; }, 5000))
      << "/proc shows " << Show(ProcTruth(cgroup)) << ", wanted " << Show(want);
  std::map<char, int> before, counted, after;
  const bool matched = testing::WaitUntil(
      [&] {
        before = ProcTruth(cgroup);
        counted = Letters(count());
        after = ProcTruth(cgroup);
        return before == after && counted == before;
      },
      3000);
  std::printf("counted %s; /proc %s\n", Show(counted).c_str(), Show(before).c_str());
  EXPECT_TRUE(matched) << "counted " << Show(counted) << "; /proc " << Show(before) << "then "
                       << Show(after);
}

TEST(TaskStatesProbeTest, CountsEqualProcForSleepingStoppedUninterruptibleRunningAndZombies) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("sw-task-iter");
  auto probe = TaskStatesProbe::Start(
      {.key = cgroup.layout().key, .features = testing::ProbeFeaturesForTests()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  ASSERT_EQ((*probe)->statuses().size(), 1u);
  EXPECT_TRUE((*probe)->statuses()[0].attached);
  EXPECT_EQ((*probe)->statuses()[0].attach_type, "iter");

  StartWorkload(cgroup);
  const std::map<char, int> want = {{'D', 1}, {'R', 1}, {'S', 8}, {'T', 1}, {'Z', 1}};
  ExpectCountsMatchProc(cgroup, want, [&] {
    absl::StatusOr<TaskStatesByCgroup> all = (*probe)->Count();
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return TaskStateCounts{};
    auto it = all->find(cgroup.id());
    return it == all->end() ? TaskStateCounts{} : it->second;
  });
  // The test process's own cgroup holds none of them.
  TestCgroup empty("sw-task-iter-empty");
  absl::StatusOr<TaskStatesByCgroup> all = (*probe)->Count();
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->contains(empty.id()));
}

TEST(TaskStatesProbeTest, ProcFallbackCountsTheSameLiveThreadsButNoZombies) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("sw-task-iter-proc");
  TaskStateSource proc(nullptr);
  StartWorkload(cgroup);
  const std::map<char, int> want = {{'D', 1}, {'R', 1}, {'S', 8}, {'T', 1}, {'Z', 1}};
  ExpectCountsMatchProc(cgroup, want, [&] {
    proc.BeginPass();
    EXPECT_FALSE(proc.from_iterator());
    absl::StatusOr<TaskStateCounts> counts = proc.Read(cgroup.id(), cgroup.dir());
    proc.EndPass();
    EXPECT_TRUE(counts.ok()) << counts.status();
    TaskStateCounts c = counts.value_or(TaskStateCounts{});
    // A zombie has left its cgroup's task list, which is all the fallback can read.
    EXPECT_EQ(c.zombie, 0u);
    c.zombie = 1;
    return c;
  });
}

TEST(TaskStatesProbeTest, TurnedOffOrWithoutBtfItSaysWhyAndThatProcIsRead) {
  absl::StatusOr<std::unique_ptr<TaskStatesProbe>> off = TaskStatesProbe::Start({.enabled = false});
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("memory.task_iterator: false"), std::string::npos)
      << off.status();
  KernelFeatures no_btf;
  absl::StatusOr<std::unique_ptr<TaskStatesProbe>> blind = TaskStatesProbe::Start({.features = no_btf});
  ASSERT_FALSE(blind.ok());
  EXPECT_NE(blind.status().message().find("read from /proc"), std::string::npos) << blind.status();
}

}  // namespace
}  // namespace stagewatch
