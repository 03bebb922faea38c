#include "cgroup/task_states.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

// A fake /proc with <tid>/stat files, and cgroup directories listing those tids.
const std::string kTasks = std::string(STAGEWATCH_FIXTURES_DIR) + "/cgroupfs/tasks";
const std::string kProc = kTasks + "/proc";

bool Contains(absl::string_view haystack, absl::string_view needle) {
  return haystack.find(needle) != absl::string_view::npos;
}

TEST(TaskStatesTest, ParsesStateAfterTheLastParenthesis) {
  EXPECT_EQ(ParseStatState("16238 (cat) R 16227 16227 14926 0 -1 4194304\n").value(), 'R');
  EXPECT_EQ(ParseStatState("7 (gunicorn worker) S 1 7").value(), 'S');
  // comm ") R (" would fool a parser that stops at the first ')'.
  EXPECT_EQ(ParseStatState("4103 () R () D 1 4103 4103\n").value(), 'D');
  EXPECT_EQ(ParseStatState("1 ((sd-pam)) t 0").value(), 't');
  EXPECT_EQ(ParseStatState("2 () Z\n").value(), 'Z');  // empty comm; line ends at the state
  EXPECT_EQ(ParseStatState("3 (x) I").value(), 'I');
}

TEST(TaskStatesTest, MalformedStatLinesAreErrors) {
  for (const char* line :
       {"", "\n", "4190 python3 R 1 4190\n", "(cat) R 1\n", "x1 (cat) R 1\n", "1 (cat)", "1 (cat) ",
        "1 (cat)R 1", "1 (cat) RS 1", "1 (cat)  R 1", "1 (cat) \n", "1 (cat\n", "1 )cat( R 1"}) {
    auto state = ParseStatState(line);
    ASSERT_FALSE(state.ok()) << '"' << line << "\" gave " << *state;
    EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(TaskStatesTest, CountsV1TasksAndSkipsVanishedOnes) {
  // tasks lists 12 tids: 4199 has no /proc entry any more, cgroup.procs is ignored.
  auto counts = ReadTaskStates(kTasks + "/v1/job", kProc);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->runnable, 2u);         // 4101 R, 4111 R
  EXPECT_EQ(counts->sleeping, 3u);         // 4102 S, 4104 I, 4110 S
  EXPECT_EQ(counts->uninterruptible, 2u);  // 4103 D (comm ") R ("), 4105 D
  EXPECT_EQ(counts->stopped, 2u);          // 4106 T, 4107 t
  EXPECT_EQ(counts->zombie, 2u);           // 4108 Z, 4109 X
}

TEST(TaskStatesTest, V2PrefersThreadsOverProcs) {
  auto counts = ReadTaskStates(kTasks + "/v2/job", kProc);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->runnable, 2u);  // threads 4101 and 4111; cgroup.procs lists only 4101
  EXPECT_EQ(counts->sleeping, 1u);
  EXPECT_EQ(counts->uninterruptible + counts->stopped + counts->zombie, 0u);
}

TEST(TaskStatesTest, FallsBackToCgroupProcs) {
  auto counts = ReadTaskStates(kTasks + "/v2/procs_only", kProc);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->uninterruptible, 1u);
  EXPECT_EQ(counts->zombie, 1u);
  EXPECT_EQ(counts->runnable + counts->sleeping + counts->stopped, 0u);
}

TEST(TaskStatesTest, EmptyCgroupCountsNothing) {
  auto counts = ReadTaskStates(kTasks + "/v2/empty", kProc);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->runnable + counts->sleeping + counts->uninterruptible + counts->stopped +
                counts->zombie,
            0u);
}

TEST(TaskStatesTest, BrokenFilesAreErrorsNamingThem) {
  struct Case {
    const char* cgroup;
    std::string says;
  } cases[] = {
      {"/bad/tidlist", kTasks + "/bad/tidlist/tasks: line 2 \"41o2\": not a thread id"},
      {"/bad/cut", kTasks + "/bad/cut/tasks: truncated"},
      {"/bad/stat", kProc + "/4190/stat: does not start with"},
      {"/bad/state", kProc + "/4191/stat: unknown task state 'Q'"},
  };
  for (const Case& c : cases) {
    auto counts = ReadTaskStates(kTasks + c.cgroup, kProc);
    ASSERT_FALSE(counts.ok()) << c.cgroup;
    EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument) << counts.status();
    EXPECT_TRUE(Contains(counts.status().message(), c.says)) << counts.status();
  }
}

TEST(TaskStatesTest, DirectoryWithoutTaskListIsNotFound) {
  for (const std::string& dir : {kTasks + "/notcgroup", kTasks + "/gone"}) {
    auto counts = ReadTaskStates(dir, kProc);
    ASSERT_FALSE(counts.ok()) << dir;
    EXPECT_EQ(counts.status().code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(Contains(counts.status().message(), dir)) << counts.status();
    EXPECT_TRUE(Contains(counts.status().message(), "cgroup.procs")) << counts.status();
  }
}

TEST(TaskStatesTest, ParsesThisProcessRealStat) {
  std::ifstream in("/proc/self/stat");
  ASSERT_TRUE(in) << "cannot open /proc/self/stat";
  std::stringstream stat;
  stat << in.rdbuf();
  auto state = ParseStatState(stat.str());
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(*state, 'R');  // reading its own stat, the thread is running
}

// A directory shaped like a v1 cgroup whose `tasks` lists real threads of this test, so the
// reader reads the real /proc; removed with its contents.
class FakeCgroup {
 public:
  FakeCgroup() {
    char dir[] = "/tmp/stagewatch-task-states-XXXXXX";
    path_ = mkdtemp(dir);
  }
  ~FakeCgroup() { std::filesystem::remove_all(path_); }
  void List(const std::vector<pid_t>& tids) {
    std::ofstream out(path_ + "/tasks", std::ios::trunc);
    for (pid_t tid : tids) out << tid << "\n";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child that sleeps until killed, reaped by the destructor if the test did not.
class Sleeper {
 public:
  Sleeper() : pid_(fork()) {
    if (pid_ == 0) {
      while (true) pause();
    }
  }
  ~Sleeper() { Kill(); }
  pid_t pid() const { return pid_; }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

// The state letter of `pid` as /proc shows it now.
char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream stat;
  stat << in.rdbuf();
  return ParseStatState(stat.str()).value_or('?');
}

bool WaitForState(pid_t pid, char state) {
  for (int i = 0; i < 500; i++) {
    if (ProcState(pid) == state) return true;
    usleep(10000);
  }
  return false;
}

TEST(TaskStateReaderTest, KeptFilesShowEachPassAfresh) {
  Sleeper child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(WaitForState(child.pid(), 'S'));
  FakeCgroup cgroup;
  cgroup.List({child.pid()});
  TaskStateReader reader;

  auto counts = reader.Read(cgroup.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->sleeping, 1u);
  EXPECT_EQ(reader.open_files(), 1u);
  reader.EndPass();

  // Stopped: the file kept open since the last pass must say so, not what it said then.
  ASSERT_EQ(kill(child.pid(), SIGSTOP), 0);
  ASSERT_TRUE(WaitForState(child.pid(), 'T'));
  counts = reader.Read(cgroup.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->stopped, 1u);
  EXPECT_EQ(counts->sleeping, 0u);
  EXPECT_EQ(reader.open_files(), 1u);
  reader.EndPass();

  // Gone (and reaped) while still listed: skipped, and its file closed.
  child.Kill();
  counts = reader.Read(cgroup.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->runnable + counts->sleeping + counts->uninterruptible + counts->stopped +
                counts->zombie,
            0u);
  EXPECT_EQ(reader.open_files(), 0u);
}

TEST(TaskStateReaderTest, ZombieThroughAKeptFile) {
  Sleeper child;
  ASSERT_GT(child.pid(), 0);
  FakeCgroup cgroup;
  cgroup.List({child.pid()});
  TaskStateReader reader;
  ASSERT_TRUE(reader.Read(cgroup.path()).ok());
  reader.EndPass();
  // Killed but not reaped: the thread still exists, as a zombie.
  ASSERT_EQ(kill(child.pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitForState(child.pid(), 'Z'));
  auto counts = reader.Read(cgroup.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->zombie, 1u);
  EXPECT_EQ(reader.open_files(), 1u);
}

TEST(TaskStateReaderTest, KeepsNoMoreFilesThanAllowedAndClosesUnlistedOnes) {
  Sleeper a, b;
  ASSERT_GT(a.pid(), 0);
  ASSERT_GT(b.pid(), 0);
  ASSERT_TRUE(WaitForState(a.pid(), 'S'));
  ASSERT_TRUE(WaitForState(b.pid(), 'S'));
  FakeCgroup first, second;
  first.List({a.pid(), b.pid()});
  second.List({b.pid()});

  TaskStateReader bounded("/proc", /*max_open_files=*/1);
  auto counts = bounded.Read(first.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->sleeping, 2u);  // the thread beyond the bound is still read
  EXPECT_EQ(bounded.open_files(), 1u);

  TaskStateReader reader;
  ASSERT_TRUE(reader.Read(first.path()).ok());
  EXPECT_EQ(reader.open_files(), 2u);
  reader.EndPass();
  // `a` is no longer listed by any cgroup read in this pass: its file goes at the pass's end.
  counts = reader.Read(second.path());
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->sleeping, 1u);
  EXPECT_EQ(reader.open_files(), 2u);
  reader.EndPass();
  EXPECT_EQ(reader.open_files(), 1u);
}

TEST(TaskStateReaderTest, DefaultBoundIsHalfTheFileLimitUpToAFixedMost) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlimit saved = limit;
  for (rlim_t soft : {rlim_t{1024}, rlim_t{20000}}) {
    if (soft > limit.rlim_max) continue;
    limit.rlim_cur = soft;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
    EXPECT_EQ(TaskStateReader::DefaultOpenFiles(),
              std::min<size_t>(soft / 2, TaskStateReader::kMaxOpenFiles))
        << "soft limit " << soft;
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

}  // namespace
}  // namespace stagewatch
