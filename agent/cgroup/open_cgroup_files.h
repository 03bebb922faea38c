// Cgroupfs files kept open between samples, so that reading one is a single pread at offset
// 0 rather than an open, a read and a close: the sampler reads a few files of every stage top
// and limit domain each memory.sample_interval (issue #9's idle cost).
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace stagewatch {

// Not thread-safe: the sampler's thread only.
class OpenCgroupFiles {
 public:
  OpenCgroupFiles() = default;
  OpenCgroupFiles(const OpenCgroupFiles&) = delete;
  OpenCgroupFiles& operator=(const OpenCgroupFiles&) = delete;
  ~OpenCgroupFiles();

  // The contents of `path`, a file of the cgroup `id`, read to EOF from offset 0. A read that
  // fails on a kept descriptor (the cgroup was removed, or recreated under the same path)
  // opens the file again once; errors are ReadCgroupFile's. A file that does not exist (a
  // stage top with no mirror in the cpu hierarchy) is looked for again after 1, 2, 4, ... up
  // to kMaxMissingSkips reads, each skipped one NotFound without a system call: a mirror made
  // a moment after the cgroup is still found at the next read.
  absl::StatusOr<std::string> Read(uint64_t id, const std::string& path);
  static constexpr int kMaxMissingSkips = 64;

  // Closes the files of every cgroup not in `alive` (removed ones).
  void Retain(const absl::flat_hash_set<uint64_t>& alive);

  size_t open_files() const;
  uint64_t opens() const { return opens_; }  // open(2) calls so far

 private:
  struct Missing {
    int skips_left = 0;
    int next_skips = 1;
  };
  struct CgroupFiles {
    absl::flat_hash_map<std::string, int> fds;
    absl::flat_hash_map<std::string, Missing> missing;
  };
  absl::flat_hash_map<uint64_t, CgroupFiles> cgroups_;
  uint64_t opens_ = 0;
};

}  // namespace stagewatch
