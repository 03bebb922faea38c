// A cgroup with the sub-cgroups made inside it (a run's, by its command): its processes, and
// its removal deepest first; the one place cgroup directories are made and removed. The
// launcher (runs/run_cgroup) and whoever closes a dead launcher's run use these.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stagewatch {

// Whether `dir` is a directory (in cgroupfs, a cgroup's).
bool IsCgroupDirectory(const std::string& dir);

// The cgroup directories directly beneath `dir`, in the order cgroupfs lists them.
std::vector<std::string> ChildCgroups(const std::string& dir);

// `dir` and every cgroup directory beneath it, deepest first (`dir` last). Empty when `dir`
// is gone.
std::vector<std::string> CgroupSubtree(const std::string& dir);

// The processes in `dir` and its sub-cgroups (their cgroup.procs). NotFound when `dir` is
// gone; an error when a cgroup.procs cannot be read (so no caller takes it for empty).
absl::StatusOr<std::vector<pid_t>> ProcessesInSubtree(const std::string& dir);

// Removes `dir` and its sub-cgroups, deepest first, SIGKILLing what is left in each and, when
// `reap` (the caller is the processes' subreaper), reaping it; retries while the kernel still
// counts exiting tasks (EBUSY), until `deadline`. A directory already gone counts as removed.
absl::Status RemoveCgroupSubtree(const std::string& dir, bool reap,
                                 std::chrono::steady_clock::time_point deadline);

// Makes the cgroup `dir` (its parent must exist): 0, or mkdir's errno (EEXIST when it exists,
// ENOENT when its parent is gone).
int MakeCgroup(const std::string& dir);

// Removes the cgroup `dir` if it is empty (no child cgroup, no task): true when it is gone now,
// removed or gone already; false while another cgroup or a task is in it, or on any refusal.
bool RemoveEmptyCgroup(const std::string& dir);

}  // namespace stagewatch
