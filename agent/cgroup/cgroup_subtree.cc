#include "cgroup/cgroup_subtree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_format.h"
#include "cgroup/cgroup_control.h"

namespace stagewatch {
namespace {

void AddSubtree(const std::string& dir, std::vector<std::string>& out) {
  for (const std::string& child : ChildCgroups(dir)) AddSubtree(child, out);
  out.push_back(dir);
}

}  // namespace

bool IsCgroupDirectory(const std::string& dir) {
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> ChildCgroups(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = dir + "/" + e->d_name;
    if (e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN && IsCgroupDirectory(path))) {
      out.push_back(path);
    }
  }
  closedir(d);
  return out;
}

std::vector<std::string> CgroupSubtree(const std::string& dir) {
  std::vector<std::string> out;
  if (IsCgroupDirectory(dir)) AddSubtree(dir, out);
  return out;
}

absl::StatusOr<std::vector<pid_t>> ProcessesInSubtree(const std::string& dir) {
  const std::vector<std::string> dirs = CgroupSubtree(dir);
  if (dirs.empty()) return absl::NotFoundError(absl::StrFormat("no cgroup %s", dir));
  std::vector<pid_t> all;
  for (const std::string& d : dirs) {
    absl::StatusOr<std::vector<pid_t>> pids = ReadCgroupProcs(d);
    if (absl::IsNotFound(pids.status())) {
      if (d != dir) continue;  // a sub-cgroup removed meanwhile
      struct stat st;
      if (stat(dir.c_str(), &st) != 0) return pids.status();  // the cgroup is gone
      return absl::FailedPreconditionError(
          absl::StrFormat("%s has no cgroup.procs: not a cgroup", dir));
    }
    if (!pids.ok()) return pids.status();
    all.insert(all.end(), pids->begin(), pids->end());
  }
  return all;
}

absl::Status RemoveCgroupSubtree(const std::string& dir, bool reap,
                                 std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    // Listed again on each try: a process not yet killed may have made another sub-cgroup.
    for (const std::string& d : CgroupSubtree(dir)) {
      if (absl::StatusOr<std::vector<pid_t>> pids = ReadCgroupProcs(d); pids.ok()) {
        for (pid_t pid : *pids) kill(pid, SIGKILL);
      }
    }
    if (reap) {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
    }
    int error = 0;
    std::string failed;
    for (const std::string& d : CgroupSubtree(dir)) {
      if (rmdir(d.c_str()) != 0 && errno != ENOENT) {
        error = errno;
        failed = d;
        break;
      }
    }
    if (error == 0) return absl::OkStatus();
    if (error != EBUSY || std::chrono::steady_clock::now() > deadline) {
      return absl::UnavailableError(
          absl::StrFormat("cannot remove the run's cgroup %s: %s", failed, std::strerror(error)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int MakeCgroup(const std::string& dir) { return mkdir(dir.c_str(), 0755) == 0 ? 0 : errno; }

bool RemoveEmptyCgroup(const std::string& dir) {
  return rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

}  // namespace stagewatch
