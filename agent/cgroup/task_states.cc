#include "cgroup/task_states.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_tree.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// Thread lists in the order the kernel's versions provide them: v1 `tasks` lists threads,
// v2 `cgroup.threads` too, and `cgroup.procs` (processes only) is the last resort.
constexpr std::string_view kTaskLists[] = {"tasks", "cgroup.threads", "cgroup.procs"};

// The counter for a state letter; nullptr for a letter this code does not know.
uint64_t* CounterFor(char state, TaskStateCounts& counts) {
  switch (state) {
    case 'R':
    case 'W':  // waking (kernels before 4.14)
      return &counts.runnable;
    case 'S':
    case 'I':
    case 'P':
      return &counts.sleeping;
    case 'D':
    case 'K':  // wakekill: a killable sleep (kernels before 4.14)
      return &counts.uninterruptible;
    case 'T':
    case 't':
      return &counts.stopped;
    case 'Z':
    case 'X':
    case 'x':  // dead (kernels before 4.14)
      return &counts.zombie;
    default:
      return nullptr;
  }
}

// The thread ids of a task list file: one decimal per line.
absl::StatusOr<std::vector<std::string>> ParseTaskList(std::string_view contents,
                                                       std::string_view file) {
  std::vector<std::string> tids;
  if (contents.empty()) return tids;  // an empty cgroup
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  size_t number = 0;
  for (std::string_view rest = contents; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    ++number;
    if (!AllDigits(line)) {
      return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": line ", number, " \"",
                                                     absl::CEscape(ToAbsl(line)),
                                                     "\": not a thread id"));
    }
    tids.emplace_back(line);
  }
  return tids;
}

// The first task list file that exists in `cgroup_dir`, read and parsed.
absl::StatusOr<std::vector<std::string>> ReadTaskList(const std::string& cgroup_dir) {
  for (std::string_view name : kTaskLists) {
    const std::string file = absl::StrCat(cgroup_dir, "/", ToAbsl(name));
    absl::StatusOr<std::string> contents = ReadCgroupFile(file);
    if (absl::IsNotFound(contents.status())) continue;
    if (!contents.ok()) return contents.status();
    return ParseTaskList(*contents, file);
  }
  return absl::NotFoundError(absl::StrCat(
      cgroup_dir, ": no tasks, cgroup.threads or cgroup.procs file (not a cgroup directory?)"));
}

}  // namespace

absl::StatusOr<char> ParseStatState(std::string_view stat_line) {
  const size_t open = stat_line.find(" (");
  const size_t close = stat_line.rfind(')');
  if (open == std::string_view::npos || !AllDigits(stat_line.substr(0, open)) ||
      close == std::string_view::npos || close < open) {
    return absl::InvalidArgumentError("does not start with \"<tid> (<comm>)\"");
  }
  // ") S" then a space, or the end of a line cut right after the state.
  const std::string_view after = stat_line.substr(close + 1);
  if (after.size() < 2 || after[0] != ' ' || after[1] == ' ' || after[1] == '\n' ||
      (after.size() > 2 && after[2] != ' ' && after[2] != '\n')) {
    return absl::InvalidArgumentError("no one-letter state after \"(<comm>)\"");
  }
  return after[1];
}

absl::StatusOr<TaskStateCounts> ReadTaskStates(const std::string& cgroup_dir,
                                               const std::string& proc_root) {
  absl::StatusOr<std::vector<std::string>> tids = ReadTaskList(cgroup_dir);
  if (!tids.ok()) return tids.status();
  TaskStateCounts counts;
  for (const std::string& tid : *tids) {
    const std::string file = absl::StrCat(proc_root, "/", tid, "/stat");
    absl::StatusOr<std::string> line = ReadCgroupFile(file);
    // The thread exited after the list was read (ENOENT on open, ESRCH on read).
    if (absl::IsNotFound(line.status())) continue;
    if (!line.ok()) return line.status();
    absl::StatusOr<char> state = ParseStatState(*line);
    if (!state.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": ", state.status().message()));
    }
    uint64_t* counter = CounterFor(*state, counts);
    if (counter == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": unknown task state '", absl::CEscape(std::string(1, *state)), "'"));
    }
    ++*counter;
  }
  return counts;
}

}  // namespace stagewatch
