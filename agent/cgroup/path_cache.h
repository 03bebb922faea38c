// Maps cgroup ids (directory inode numbers) to paths within one hierarchy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace stagewatch {

struct CgroupPathCacheOptions {
  absl::Duration min_rescan_interval = absl::Milliseconds(200);
  // An id still unknown after a rescan is not looked for again until this has passed.
  absl::Duration negative_ttl = absl::Seconds(10);
  size_t max_entries = 65536;  // paths kept; a bigger tree is truncated and counted
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

struct CgroupPathCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;        // lookups not answered from the cache
  uint64_t rescans = 0;       // walks of the hierarchy
  uint64_t rate_limited = 0;  // misses that could not rescan yet
  uint64_t negative_hits = 0; // misses answered by a cached "unknown"
  uint64_t unknown = 0;       // lookups that ended with no path
  uint64_t truncated = 0;     // directories left out of the last walk because of max_entries
};

// Thread-safe. Paths are relative to the hierarchy root and start with "/" ("/" is the root).
class CgroupPathCache {
 public:
  CgroupPathCache(std::string hierarchy_root, CgroupPathCacheOptions options = {});

  // The path of `id`, walking the hierarchy again on a miss (rate-limited).
  std::optional<std::string> Lookup(uint64_t id);

  // Walks the hierarchy now, regardless of the rate limit, and returns every (id, path).
  std::vector<std::pair<uint64_t, std::string>> RescanAll();

  const std::string& root() const { return root_; }
  CgroupPathCacheStats stats() const;

 private:
  bool RescanLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const CgroupPathCacheOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::string> paths_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, absl::Time> negative_ ABSL_GUARDED_BY(mu_);  // id → expiry
  absl::Time last_rescan_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  CgroupPathCacheStats stats_ ABSL_GUARDED_BY(mu_);
};

// The inode number of a directory, which is the cgroup id of a cgroupfs directory.
std::optional<uint64_t> CgroupIdOfDirectory(const std::string& path);

}  // namespace stagewatch
