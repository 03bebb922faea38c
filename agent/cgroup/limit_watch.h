// Which cgroups had a memory limit written, told by the kernel rather than polled. A write(2)
// to a cgroupfs file raises inotify's IN_MODIFY on it as on any file (the VFS's
// fsnotify_modify), so one watch on each cgroup's limit files (memory.max and memory.high on
// cgroup2, memory.limit_in_bytes on v1) says which limits `systemctl set-property`, a job
// scheduler or an administrator wrote, at the next sample; at 10,000 cgroups, polling every
// cgroup's limit once a minute was a quarter of the memory sampler's idle CPU
// (bench/README.md). A cgroup inotify cannot watch (no inotify, no such file, past
// fs.inotify.max_user_watches) is left to the caller's polling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace stagewatch {

// Not thread-safe: the memory sampler's thread only.
class LimitWatch {
 public:
  // Watches the files named `files` in each cgroup directory added.
  explicit LimitWatch(std::vector<std::string> files);
  ~LimitWatch();
  LimitWatch(const LimitWatch&) = delete;
  LimitWatch& operator=(const LimitWatch&) = delete;

  // Watches the limit files in `dir` for cgroup `id`; false (and nothing watched) if one of
  // them cannot be.
  bool Add(uint64_t id, const std::string& dir);
  void Remove(uint64_t id);
  bool watched(uint64_t id) const { return wds_of_.contains(id); }
  size_t cgroups() const { return wds_of_.size(); }

  struct Written {
    absl::flat_hash_set<uint64_t> ids;  // watched cgroups whose limit files were written
    bool all = false;  // the kernel's event queue overflowed: any watched one may have been
  };
  // What was written since the last call; never blocks.
  Written Take();

 private:
  const std::vector<std::string> files_;
  const int fd_;  // -1: no inotify, every Add fails
  absl::flat_hash_map<int, uint64_t> id_of_;          // by watch descriptor
  absl::flat_hash_map<uint64_t, std::vector<int>> wds_of_;  // by cgroup id
};

}  // namespace stagewatch
