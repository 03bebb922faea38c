// Cgroupfs files kept open between reads, so that reading one is a single pread at offset 0
// rather than an open, a read and a close (a cgroupfs file gives its current value at every
// read from the start): the agent reads a few files of every stage top, limit domain and
// discovered run each memory.sample_interval (issue #9's idle cost).
//
// Each reading thread has one cache, with its own bound on the descriptors it keeps: the memory
// sampler's keeps every file of its tops and domains (their number is bounded by
// memory.max_limit_domains), the discovered-run sampler's each run's usage and CPU time files,
// within a share of RLIMIT_NOFILE, so that thousands of runs never exhaust the descriptors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "cgroup/cgroup_file_ids.h"

namespace stagewatch {

// Not thread-safe: one thread's reads only.
class OpenCgroupFiles {
 public:
  static constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();
  // At most `max_open` descriptors stay open at once; past them a file is opened for each read.
  explicit OpenCgroupFiles(size_t max_open = kUnbounded) : max_open_(max_open) {}
  OpenCgroupFiles(const OpenCgroupFiles&) = delete;
  OpenCgroupFiles& operator=(const OpenCgroupFiles&) = delete;
  ~OpenCgroupFiles() = default;  // closes the files read by cgroup id; Files close their own

  // One file, for a reader that keeps its own account of it (RunCgroupFiles: which files it
  // still looks for) and its path. Destroy it before its cache.
  class File {
   public:
    explicit File(OpenCgroupFiles* cache) : cache_(cache) {}
    File(File&& other) noexcept;
    File& operator=(File&& other) noexcept;
    ~File() { Close(); }

    // How a Read failed: the errno, and whether it was the open's (else the read's).
    struct Failure {
      int error = 0;
      bool at_open = false;
    };
    // The whole file at `path` (always the same one for a File) from offset 0: on its kept
    // descriptor, else opened for this read and kept open when `keep` and the cache's bound
    // allows. A descriptor whose read fails is closed. Errors as ReadCgroupFile's (a missing
    // file is NotFound); `failure` says which step failed.
    absl::StatusOr<std::string> Read(const std::string& path, bool keep,
                                     Failure* failure = nullptr);
    bool is_open() const { return fd_ >= 0; }

   private:
    void Close();

    OpenCgroupFiles* cache_;
    int fd_ = -1;
  };

  // The contents of `path`, a file of the cgroup `id`, kept open. A read that fails on a kept
  // descriptor (the cgroup was removed, or recreated under the same path) opens the file again
  // once; errors are ReadCgroupFile's. A file that does not exist (a stage top with no mirror in
  // the cpu hierarchy) is looked for again after 1, 2, 4, ... up to kMaxMissingSkips reads,
  // each skipped one NotFound without a system call: a mirror made a moment after the cgroup is
  // still found at the next read.
  absl::StatusOr<std::string> Read(uint64_t id, const std::string& path);
  static constexpr int kMaxMissingSkips = 64;

  // Closes the files read for every cgroup not in `alive` (removed ones).
  void Retain(const absl::flat_hash_set<uint64_t>& alive);

  // The ids its readers' files go by (RunCgroupFiles).
  CgroupFileIds& file_ids() { return file_ids_; }

  size_t open_files() const { return open_; }  // descriptors kept open now
  uint64_t opens() const { return opens_; }      // open(2) calls so far

 private:
  struct Missing {
    int skips_left = 0;
    int next_skips = 1;
  };
  struct CgroupFiles {
    absl::flat_hash_map<std::string, File> files;
    absl::flat_hash_map<std::string, Missing> missing;
  };

  const size_t max_open_;
  size_t open_ = 0;
  uint64_t opens_ = 0;
  CgroupFileIds file_ids_;
  absl::flat_hash_map<uint64_t, CgroupFiles> cgroups_;  // last: its Files count in open_
};

}  // namespace stagewatch
