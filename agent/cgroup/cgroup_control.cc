#include "cgroup/cgroup_control.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/limit_files.h"

namespace stagewatch {
namespace {

// Writes `size` bytes of `value` to `file` in one write: 0, or the errno. Async-signal-safe.
int WriteOnce(const char* file, const char* value, size_t size) {
  const int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int error = 0;
  if (write(fd, value, size) != static_cast<ssize_t>(size)) error = errno;
  close(fd);
  return error;
}

// The words of a cgroup.controllers or cgroup.subtree_control file; none when unreadable.
std::vector<std::string> ControllerList(const std::string& file) {
  absl::StatusOr<std::string> text = ReadCgroupFile(file);
  if (!text.ok()) return {};
  return absl::StrSplit(*text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
}

}  // namespace

std::string CgroupProcsFile(const std::string& dir) { return dir + "/cgroup.procs"; }

std::string SubtreeControlFile(const std::string& dir) { return dir + "/cgroup.subtree_control"; }

absl::StatusOr<std::vector<pid_t>> ReadCgroupProcs(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadCgroupFile(CgroupProcsFile(dir));
  if (!text.ok()) return text.status();
  std::vector<pid_t> pids;
  std::istringstream in(*text);
  for (pid_t pid; in >> pid;) {
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

std::vector<std::string> AvailableControllers(const std::string& dir) {
  return ControllerList(dir + "/cgroup.controllers");
}

std::vector<std::string> EnabledControllers(const std::string& dir) {
  return ControllerList(SubtreeControlFile(dir));
}

absl::Status WriteCgroupFile(const std::string& file, const std::string& value, int* error_out) {
  const int error = WriteOnce(file.c_str(), value.data(), value.size());
  if (error_out != nullptr) *error_out = error;
  if (error == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrFormat("writing \"%s\" to %s failed: %s", value, file, std::strerror(error)));
}

absl::StatusOr<std::string> ReadCpusetListFile(const std::string& file) {
  absl::StatusOr<std::string> text = ReadCgroupFile(file);
  if (!text.ok()) return text.status();
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::Status InheritV1Cpuset(const std::string& dir) {
  const std::string parent = dir.substr(0, dir.rfind('/'));
  for (const char* file : {kV1LimitFiles.cpuset_cpus, kV1LimitFiles.cpuset_mems}) {
    absl::StatusOr<std::string> own = ReadCpusetListFile(absl::StrCat(dir, "/", file));
    if (!own.ok()) return own.status();
    if (!own->empty()) continue;
    absl::StatusOr<std::string> given = ReadCpusetListFile(absl::StrCat(parent, "/", file));
    if (!given.ok()) return given.status();
    if (given->empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the cpuset cgroup %s has no %s to give its child; pass --cgroup.parent a cpuset "
          "cgroup that has some", parent, file));
    }
    if (absl::Status s = WriteCgroupFile(absl::StrCat(dir, "/", file), *given); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

int JoinCgroupsAfterFork(const std::vector<std::string>& procs_files) {
  for (const std::string& file : procs_files) {
    // "0" moves the writing process itself.
    if (const int error = WriteOnce(file.c_str(), "0", 1); error != 0) return error;
  }
  return 0;
}

}  // namespace stagewatch
