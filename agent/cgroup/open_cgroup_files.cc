#include "cgroup/open_cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

// The whole file from offset 0; cgroupfs files report a size of 0 or 4096, so read to EOF.
absl::StatusOr<std::string> ReadFrom(int fd, const std::string& path) {
  std::string contents;
  char buf[4096];
  while (true) {
    const ssize_t n = pread(fd, buf, sizeof(buf), static_cast<off_t>(contents.size()));
    if (n == 0) return contents;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    }
    contents.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

OpenCgroupFiles::~OpenCgroupFiles() { Retain({}); }

absl::StatusOr<std::string> OpenCgroupFiles::Read(uint64_t id, const std::string& path) {
  CgroupFiles& files = cgroups_[id];
  if (auto it = files.fds.find(path); it != files.fds.end()) {
    absl::StatusOr<std::string> contents = ReadFrom(it->second, path);
    if (contents.ok()) return contents;
    close(it->second);  // stale: open it again below
    files.fds.erase(it);
  }
  auto missing = files.missing.find(path);
  if (missing != files.missing.end() && missing->second.skips_left > 0) {
    missing->second.skips_left--;
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": No such file or directory"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  opens_++;
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      Missing& m = files.missing[path];
      m.skips_left = m.next_skips;
      m.next_skips = std::min(2 * m.next_skips, kMaxMissingSkips);
    }
    return absl::ErrnoToStatus(err, absl::StrCat("cannot open ", path));
  }
  if (missing != files.missing.end()) files.missing.erase(missing);
  absl::StatusOr<std::string> contents = ReadFrom(fd, path);
  if (!contents.ok()) {
    close(fd);
    return contents;
  }
  files.fds.emplace(path, fd);
  return contents;
}

void OpenCgroupFiles::Retain(const absl::flat_hash_set<uint64_t>& alive) {
  for (auto it = cgroups_.begin(); it != cgroups_.end();) {
    if (alive.contains(it->first)) {
      ++it;
      continue;
    }
    for (const auto& [path, fd] : it->second.fds) close(fd);
    cgroups_.erase(it++);
  }
}

size_t OpenCgroupFiles::open_files() const {
  size_t n = 0;
  for (const auto& [id, files] : cgroups_) n += files.fds.size();
  return n;
}

}  // namespace stagewatch
