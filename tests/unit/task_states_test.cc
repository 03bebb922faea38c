#include "cgroup/task_states.h"

#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace stagewatch
