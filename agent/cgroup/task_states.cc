#include "cgroup/task_states.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "absl/cleanup/cleanup.h"
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

// Reads the whole file `path` into `out` (reusing its buffer). Errors name the file and the
// errno text; a missing file is NotFound.
absl::Status ReadInto(const std::string& path, std::string* out) {
  out->clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  absl::Cleanup closer = [fd] { close(fd); };
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return absl::OkStatus();
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

// The thread ids of a task list file: one decimal per line.
absl::Status ParseTaskList(std::string_view contents, std::string_view file,
                           std::vector<uint64_t>* tids) {
  tids->clear();
  if (contents.empty()) return absl::OkStatus();  // an empty cgroup
  return ForEachCgroupFileLine(contents, file, [tids](std::string_view line) -> const char* {
    uint64_t tid = 0;
    if (!ParseDigits(line, tid)) return "not a thread id";
    tids->push_back(tid);
    return nullptr;
  });
}

// The first task list file that exists in `cgroup_dir`, read into `contents` and parsed.
absl::Status ReadTaskList(const std::string& cgroup_dir, std::string* contents,
                          std::vector<uint64_t>* tids) {
  for (std::string_view name : kTaskLists) {
    const std::string file = absl::StrCat(cgroup_dir, "/", ToAbsl(name));
    absl::Status read = ReadInto(file, contents);
    if (absl::IsNotFound(read)) continue;
    if (!read.ok()) return read;
    return ParseTaskList(*contents, file, tids);
  }
  return absl::NotFoundError(absl::StrCat(
      cgroup_dir, ": no tasks, cgroup.threads or cgroup.procs file (not a cgroup directory?)"));
}

}  // namespace

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

size_t TaskStateReader::DefaultOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return kMaxOpenFiles;
  }
  return std::min<size_t>(limit.rlim_cur / 2, kMaxOpenFiles);
}

TaskStateReader::TaskStateReader(std::string proc_root, size_t max_open_files)
    : proc_root_(std::move(proc_root)), max_open_files_(max_open_files) {}

TaskStateReader::~TaskStateReader() {
  for (const auto& [tid, stat] : open_) close(stat.fd);
  if (proc_fd_ >= 0) close(proc_fd_);
}

std::string TaskStateReader::StatPath(uint64_t tid) const {
  return absl::StrCat(proc_root_, "/", tid, "/stat");
}

absl::StatusOr<char> TaskStateReader::StateFromFile(int fd, uint64_t tid) const {
  // The state follows "tid (comm)" and comm is at most 64 bytes, so the start of the line
  // is enough: nothing after comm can be a ')'. Reading at offset 0 writes the file afresh.
  char line[512];
  ssize_t n = -1;
  do {
    n = pread(fd, line, sizeof(line), 0);
  } while (n < 0 && errno == EINTR);
  // ESRCH (NotFound): the thread this file was opened for is gone.
  if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", StatPath(tid)));
  absl::StatusOr<char> state = ParseStatState(std::string_view(line, static_cast<size_t>(n)));
  if (!state.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(StatPath(tid), ": ", state.status().message()));
  }
  return state;
}

absl::StatusOr<char> TaskStateReader::ReadState(uint64_t tid) {
  if (auto cached = open_.find(tid); cached != open_.end()) {
    cached->second.pass = pass_;
    absl::StatusOr<char> state = StateFromFile(cached->second.fd, tid);
    if (!absl::IsNotFound(state.status())) return state;
    // The thread that had this number has exited; a new one may have it now.
    close(cached->second.fd);
    open_.erase(cached);
  }
  if (proc_fd_ < 0) {
    proc_fd_ = open(proc_root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd_ < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", proc_root_));
  }
  char relative[32];
  snprintf(relative, sizeof(relative), "%" PRIu64 "/stat", tid);
  const int fd = openat(proc_fd_, relative, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", StatPath(tid)));
  absl::StatusOr<char> state = StateFromFile(fd, tid);
  if (state.ok() && open_.size() < max_open_files_) {
    open_[tid] = {fd, pass_};
  } else {
    close(fd);
  }
  return state;
}

absl::StatusOr<TaskStateCounts> TaskStateReader::Read(const std::string& cgroup_dir) {
  if (absl::Status listed = ReadTaskList(cgroup_dir, &list_, &tids_); !listed.ok()) {
    return listed;
  }
  TaskStateCounts counts;
  for (uint64_t tid : tids_) {
    absl::StatusOr<char> state = ReadState(tid);
    // The thread exited after the list was read (ENOENT on open, ESRCH on read).
    if (absl::IsNotFound(state.status())) continue;
    if (!state.ok()) return state.status();
    uint64_t* counter = CounterFor(*state, counts);
    if (counter == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(StatPath(tid), ": unknown task state '",
                                                     absl::CEscape(std::string(1, *state)), "'"));
    }
    ++*counter;
  }
  return counts;
}

void TaskStateReader::EndPass() {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.pass == pass_) {
      ++it;
      continue;
    }
    close(it->second.fd);
    open_.erase(it++);
  }
  ++pass_;
}

absl::StatusOr<TaskStateCounts> ReadTaskStates(const std::string& cgroup_dir,
                                               const std::string& proc_root) {
  TaskStateReader reader(proc_root, /*max_open_files=*/0);
  return reader.Read(cgroup_dir);
}

}  // namespace stagewatch
