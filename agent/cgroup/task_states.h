// How many of a cgroup's threads are in each scheduler state, from /proc/<tid>/stat.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace stagewatch {

struct TaskStateCounts {
  uint64_t runnable = 0;         // R: running or waiting for a CPU
  uint64_t sleeping = 0;         // S, I (idle kernel thread), P (parked kernel thread)
  uint64_t uninterruptible = 0;  // D
  uint64_t stopped = 0;          // T (stopped by a signal), t (stopped by a tracer)
  uint64_t zombie = 0;           // Z, X (dead, being reaped)
};

// The counter of `counts` for a /proc state letter; nullptr for a letter this code does not
// know.
uint64_t* CounterFor(char state, TaskStateCounts& counts);

// The state letter of a /proc/<tid>/stat line "tid (comm) S ...". comm may hold spaces and
// parentheses, so the state follows the LAST ')'. InvalidArgument when the line has no such
// shape.
absl::StatusOr<char> ParseStatState(std::string_view stat_line);

// Reads the task states of many cgroups, scrape after scrape. Each thread's /proc/<tid>/stat
// stays open from one pass to the next, and is read again at offset 0, which makes the kernel
// write it afresh: that saves the open, the path lookup and the close of every thread at
// every scrape. An open stat file holds its thread, not its number: once the thread is gone
// the read fails (ESRCH), so a number reused by a new thread is opened anew, never read
// through the old file. At most `max_open_files` stay open (further threads are opened and
// closed each time), and EndPass() closes those of threads no pass listed.
// Not thread-safe: one reader per collector.
class TaskStateReader {
 public:
  // Each kept file also holds a page of kernel memory (its seq_file buffer), charged to the
  // agent: 4,096 files are 16 MiB.
  static constexpr size_t kMaxOpenFiles = 4096;
  // Half the soft RLIMIT_NOFILE, so the rest of the agent keeps the other half, and at most
  // kMaxOpenFiles.
  static size_t DefaultOpenFiles();

  explicit TaskStateReader(std::string proc_root = "/proc",
                           size_t max_open_files = DefaultOpenFiles());
  ~TaskStateReader();
  TaskStateReader(const TaskStateReader&) = delete;
  TaskStateReader& operator=(const TaskStateReader&) = delete;

  // Counts the threads directly in the cgroup directory `cgroup_dir` (not its descendants),
  // listed by `tasks` (v1), else `cgroup.threads` (v2), else `cgroup.procs`. Threads that exit
  // while being read are skipped.
  absl::StatusOr<TaskStateCounts> Read(const std::string& cgroup_dir);

  // Ends a pass over the cgroups: closes the stat files of threads that Read() did not list
  // since the previous EndPass() (they exited or left the cgroups read).
  void EndPass();

  size_t open_files() const { return open_.size(); }

 private:
  struct OpenStat {
    int fd = -1;
    uint64_t pass = 0;  // the last pass that listed the thread
  };

  // The state letter of thread `tid`; NotFound when it has exited.
  absl::StatusOr<char> ReadState(uint64_t tid);
  absl::StatusOr<char> StateFromFile(int fd, uint64_t tid) const;
  std::string StatPath(uint64_t tid) const;

  const std::string proc_root_;
  const size_t max_open_files_;
  int proc_fd_ = -1;  // proc_root_, for openat(); -1 until the first read
  uint64_t pass_ = 1;
  absl::flat_hash_map<uint64_t, OpenStat> open_;
  std::vector<uint64_t> tids_;  // buffers reused from one Read() to the next
  std::string list_;
};

// One cgroup read once, keeping no files open.
absl::StatusOr<TaskStateCounts> ReadTaskStates(const std::string& cgroup_dir,
                                               const std::string& proc_root = "/proc");

}  // namespace stagewatch
