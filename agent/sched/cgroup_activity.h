// Which cgroups had a task on a CPU since a sampler last read them, from the sched probe's
// per-cgroup counters (bpf/sched.h). A cgroup none of whose tasks ran cannot have charged
// memory or CPU time in task context, so its cgroupfs files still say what they said at its
// last read: the samplers keep that reading instead of reading the files again. Charges from
// outside task context (a socket's buffers, swap-in or page cache by another cgroup's task,
// reclaim) are caught by a slow floor: every key is read at least every kIdleRereadInterval.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace stagewatch {

// The idle floor: a cgroup is read at least this often however quiet it is.
inline constexpr absl::Duration kIdleRereadInterval = absl::Seconds(30);

struct ActivityLook {
  absl::Time at;
  // Cgroup id → its switches out plus on-CPU ns so far: a change means one of its tasks ran.
  absl::flat_hash_map<uint64_t, uint64_t> counters;
  // Cgroups with a task on a CPU at the look: one that has run since without switching out
  // has moved no counter yet.
  absl::flat_hash_set<uint64_t> running;
  // Counter updates the kernel refused (its map was full) so far: a change means some cgroup
  // ran uncounted, so every key is read.
  uint64_t refused = 0;
};

// A look at the sched tracker's counters (null: the probe is off, or none yet: every key is
// read), taken before the reads it gates, so activity after it shows in a later look. The
// memory sampler's is taken just before each sample; the run sampler uses the newest.
using ActivitySource = std::function<std::shared_ptr<const ActivityLook>()>;

// Per key (a stage, a run), what its cgroups' counters summed to at its last read. Not
// thread-safe: one sampler's own.
class ActivityGate {
 public:
  explicit ActivityGate(absl::Duration floor = kIdleRereadInterval) : floor_(floor) {}

  // Whether `key`, made of the cgroups `ids`, is to be read at `now`: there is no look, it was
  // never read, one of its cgroups ran or runs, the kernel refused counts, or its last read is
  // `floor` old. When due, it counts as read now (Forget() it if the read fails).
  bool Due(uint64_t key, absl::Span<const uint64_t> ids, const ActivityLook* look,
           absl::Time now);
  void Forget(uint64_t key) { seen_.erase(key); }
  // Drops the keys `keep` says no to.
  void Retain(const std::function<bool(uint64_t)>& keep);

 private:
  struct Seen {
    uint64_t sum = 0;
    uint64_t refused = 0;
    absl::Time read_at;
  };
  const absl::Duration floor_;
  absl::flat_hash_map<uint64_t, Seen> seen_;
};

}  // namespace stagewatch
