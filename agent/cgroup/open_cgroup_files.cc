#include "cgroup/open_cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

// The whole file from offset 0; cgroupfs files report a size of 0 or 4096, so read to EOF.
absl::StatusOr<std::string> ReadFrom(int fd, const std::string& path, int* error) {
  std::string contents;
  char buf[4096];
  while (true) {
    const ssize_t n = pread(fd, buf, sizeof(buf), static_cast<off_t>(contents.size()));
    if (n == 0) return contents;
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = errno;
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    }
    contents.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

OpenCgroupFiles::File::File(File&& other) noexcept
    : cache_(other.cache_), fd_(std::exchange(other.fd_, -1)) {}

OpenCgroupFiles::File& OpenCgroupFiles::File::operator=(File&& other) noexcept {
  if (this != &other) {
    Close();
    cache_ = other.cache_;
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void OpenCgroupFiles::File::Close() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  cache_->open_--;
}

absl::StatusOr<std::string> OpenCgroupFiles::File::Read(const std::string& path, bool keep,
                                                         Failure* failure) {
  Failure unused;
  Failure& failed = failure != nullptr ? *failure : unused;
  failed = {};
  int fd = fd_;
  if (fd < 0) {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    cache_->opens_++;
    if (fd < 0) {
      failed = {errno, true};
      return absl::ErrnoToStatus(failed.error, absl::StrCat("cannot open ", path));
    }
    if (keep && cache_->open_ < cache_->max_open_) {
      cache_->open_++;
      fd_ = fd;
    }
  }
  const bool kept = fd == fd_;
  absl::StatusOr<std::string> contents = ReadFrom(fd, path, &failed.error);
  if (!kept) {
    close(fd);
  } else if (!contents.ok()) {
    Close();  // the cgroup was removed (or recreated at the path): opened again at the next read
  }
  return contents;
}

absl::StatusOr<std::string> OpenCgroupFiles::Read(uint64_t id, const std::string& path) {
  CgroupFiles& cgroup = cgroups_[id];
  File& file = cgroup.files.try_emplace(path, this).first->second;
  if (file.is_open()) {
    absl::StatusOr<std::string> contents = file.Read(path, true);
    if (contents.ok()) return contents;  // else closed: opened again below
  }
  auto missing = cgroup.missing.find(path);
  if (missing != cgroup.missing.end() && missing->second.skips_left > 0) {
    missing->second.skips_left--;
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": No such file or directory"));
  }
  File::Failure failure;
  absl::StatusOr<std::string> contents = file.Read(path, true, &failure);
  if (!contents.ok() && failure.at_open) {
    if (failure.error == ENOENT) {
      Missing& m = cgroup.missing[path];
      m.skips_left = m.next_skips;
      m.next_skips = std::min(2 * m.next_skips, kMaxMissingSkips);
    }
    return contents;
  }
  if (missing != cgroup.missing.end()) cgroup.missing.erase(missing);
  return contents;
}

void OpenCgroupFiles::Retain(const absl::flat_hash_set<uint64_t>& alive) {
  absl::erase_if(cgroups_, [&alive](const auto& entry) { return !alive.contains(entry.first); });
}

}  // namespace stagewatch
