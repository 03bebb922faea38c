// A cgroup's core files (cgroup.*): the processes in it, the cgroup2 controllers it offers and
// enables for its children; and the one writer of cgroup files (limits, subtree_control,
// cgroup.procs), for the launcher's run cgroups.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stagewatch {

// The cgroup.procs file of the cgroup directory `dir`: a process that writes "0" to it joins.
std::string CgroupProcsFile(const std::string& dir);
// The cgroup.subtree_control file of the cgroup2 directory `dir`: "+memory" enables memory for
// its children.
std::string SubtreeControlFile(const std::string& dir);

// The processes in the cgroup directory `dir` (its cgroup.procs). NotFound when it is gone.
absl::StatusOr<std::vector<pid_t>> ReadCgroupProcs(const std::string& dir);

// The controllers the cgroup2 directory `dir` offers its children (cgroup.controllers), and
// those it has enabled for them (cgroup.subtree_control); none when the file cannot be read.
std::vector<std::string> AvailableControllers(const std::string& dir);
std::vector<std::string> EnabledControllers(const std::string& dir);

// Writes `value` to an existing cgroup file; the error names the file and the kernel's errno,
// which is also left in `error` when given.
absl::Status WriteCgroupFile(const std::string& file, const std::string& value,
                             int* error = nullptr);

// The list a cpuset file holds ("0-1,4", its newline gone; "" when empty): cpuset.cpus,
// cpuset.mems, and their effective files.
absl::StatusOr<std::string> ReadCpusetListFile(const std::string& file);

// Gives the v1 cpuset cgroup directory `dir` its parent's cpuset.cpus and cpuset.mems where it
// has none: a v1 cpuset cgroup starts empty, and no task may join it so.
absl::Status InheritV1Cpuset(const std::string& dir);

// Moves the calling process into each cgroup of `procs_files` (their cgroup.procs), in order:
// 0, or the errno of the first that refused. Async-signal-safe (no allocation, no lock), for a
// child between fork and exec.
int JoinCgroupsAfterFork(const std::vector<std::string>& procs_files);

}  // namespace stagewatch
