#include "runs/cgroup_subtree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "absl/strings/str_format.h"
#include "cgroup/cgroup_tree.h"

namespace stagewatch {
namespace {

// The cgroup directories directly beneath `dir` (cgroupfs has no other directories).
std::vector<std::string> Children(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (e->d_type == DT_DIR ||
        (e->d_type == DT_UNKNOWN && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      out.push_back(path);
    }
  }
  closedir(d);
  return out;
}

void AddSubtree(const std::string& dir, std::vector<std::string>& out) {
  for (const std::string& child : Children(dir)) AddSubtree(child, out);
  out.push_back(dir);
}

// The pids in one cgroup's cgroup.procs; NotFound when the cgroup is gone.
absl::StatusOr<std::vector<pid_t>> ProcessesIn(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadCgroupFile(dir + "/cgroup.procs");
  if (!text.ok()) return text.status();
  std::vector<pid_t> pids;
  std::istringstream in(*text);
  for (pid_t pid; in >> pid;) {
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

std::vector<std::string> CgroupSubtree(const std::string& dir) {
  std::vector<std::string> out;
  struct stat st;
  if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) AddSubtree(dir, out);
  return out;
}

absl::StatusOr<std::vector<pid_t>> ProcessesInSubtree(const std::string& dir) {
  const std::vector<std::string> dirs = CgroupSubtree(dir);
  if (dirs.empty()) return absl::NotFoundError(absl::StrFormat("no cgroup %s", dir));
  std::vector<pid_t> all;
  for (const std::string& d : dirs) {
    absl::StatusOr<std::vector<pid_t>> pids = ProcessesIn(d);
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
      if (absl::StatusOr<std::vector<pid_t>> pids = ProcessesIn(d); pids.ok()) {
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

}  // namespace stagewatch
