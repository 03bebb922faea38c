// Maps cgroup ids (directory inode numbers) to paths within one hierarchy.
#pragma once

#include <cstdint>
#include <deque>
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
  // How long a removed cgroup stays nameable: ten times what the latest of its late events
  // takes to be named (the ring buffers are read within a second; the sampler names the ids of
  // BPF maps and the namer takes the removals every second). Trackers that collect later
  // name dead cgroups from the namer, which keeps them by collections.
  absl::Duration removed_kept_for = absl::Seconds(10);
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
  uint64_t events = 0;        // lifecycle events applied (mkdir and rmdir)
};

// A cgroup that was removed, and when (a sequence number of the cache's removals).
struct RemovedCgroup {
  uint64_t sequence = 0;
  uint64_t id = 0;
  std::string path;
  absl::Time removed_at;
};

// What the cache holds of removed cgroups, for tests of its bounds.
struct CgroupPathCacheHeld {
  size_t removed = 0;         // removals kept
  size_t index_capacity = 0;  // slots of the id → removal index
};

// Thread-safe. Paths are relative to the hierarchy root and start with "/" ("/" is the root).
//
// Two ways to learn the tree. By walks (the fallback): a miss walks the hierarchy again,
// rate-limited, and Current() walks. By the kernel's lifecycle events (UseEvents()): one walk
// at start, then OnMkdir()/OnRmdir() keep the map exact; a miss first hands the events already
// queued to the cache (the `drain` callback) and never walks. Removed cgroups stay nameable
// (Lookup) for options.removed_kept_for, and are listed once each by RemovedSince(). What is
// kept of them is bounded both ways: by time, so that it all goes once a churn stops (and
// their index is shrunk), and by count (kRemovedKept), so that a fast churn cannot make it
// grow: at most one path (its bytes) and one index slot for each removal kept.
class CgroupPathCache {
 public:
  static constexpr size_t kRemovedKept = 4096;

  CgroupPathCache(std::string hierarchy_root, CgroupPathCacheOptions options = {});

  // Switches to events: walks once now, then trusts OnMkdir/OnRmdir. `drain` applies the events
  // queued so far (it calls OnMkdir/OnRmdir); it is called without the cache's lock held.
  void UseEvents(std::function<void()> drain);
  bool uses_events() const;
  // With events, applies those queued so far; by walks, nothing. Then lets go of removals
  // older than options.removed_kept_for (the namer calls it every second).
  void ApplyQueued();

  void OnMkdir(uint64_t id, std::string path);
  void OnRmdir(uint64_t id, std::string path);
  // Walks again and makes the map what the walk found, recording what vanished as removed:
  // after events were lost.
  void Resync();

  // The path of `id` (live or recently removed): with events, after draining the queued ones;
  // by walks, walking again on a miss (rate-limited).
  std::optional<std::string> Lookup(uint64_t id);

  // For rare events (OOM kills), whose cgroup may be a moment old: like Lookup, but by walks
  // a miss always walks, ignoring the rate limit and earlier misses.
  std::optional<std::string> LookupNow(uint64_t id);

  // Every live (id, path): with events, the map after draining; by walks, a walk now.
  std::vector<std::pair<uint64_t, std::string>> Current();

  // Walks the hierarchy now, regardless of the rate limit, and returns every (id, path).
  std::vector<std::pair<uint64_t, std::string>> RescanAll();

  // Removals after `*cursor`, oldest first; moves `*cursor` past them. Removals older than the
  // kRemovedKept kept are missed (rare: the namer asks every second).
  std::vector<RemovedCgroup> RemovedSince(uint64_t* cursor) const;

  // Changes whenever the live map or the removals change.
  uint64_t version() const;

  const std::string& root() const { return root_; }
  CgroupPathCacheStats stats() const;
  CgroupPathCacheHeld held() const;

 private:
  bool RescanLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordRemovedLocked(uint64_t id, std::string path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the oldest removals past the count or the time bound.
  void ExpireRemovedLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<std::string> FindLocked(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const CgroupPathCacheOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::string> paths_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, absl::Time> negative_ ABSL_GUARDED_BY(mu_);  // id → expiry
  absl::Time last_rescan_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  CgroupPathCacheStats stats_ ABSL_GUARDED_BY(mu_);
  std::function<void()> drain_;  // set once by UseEvents, before other threads look up
  bool events_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t removals_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<RemovedCgroup> removed_ ABSL_GUARDED_BY(mu_);  // the paths, oldest first
  // id → sequence of its newest removal in removed_: the path is kept once, not twice.
  absl::flat_hash_map<uint64_t, uint64_t> removed_index_ ABSL_GUARDED_BY(mu_);
};

// The inode number of a directory, which is the cgroup id of a cgroupfs directory.
std::optional<uint64_t> CgroupIdOfDirectory(const std::string& path);

}  // namespace stagewatch
