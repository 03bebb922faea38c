// Attributes OOM kill events to stages, counts them and logs each one. The kernel's own
// per-cgroup oom_kill counters they are checked against are the sampler's to read
// (Snapshot::oom_kills).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "cgroup/path_cache.h"
#include "bpf/cgroup_key.h"
#include "bpf/oom.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

struct OomStageTotals {
  uint64_t kernel_kills = 0;     // chosen by the kernel's OOM killer
  uint64_t userspace_kills = 0;  // SIGKILLs from configured user-space killers
  double last_kill_unix_seconds = 0;
  // When the latest kernel kills happened (Unix seconds, oldest first; kRecentKills of them):
  // the kernel's counters are read at one moment and must be compared with the kills by then.
  std::deque<double> recent_kernel_kills;

  // The kernel kills that happened by `unix_seconds`.
  uint64_t KernelKillsBy(double unix_seconds) const {
    const auto later = std::upper_bound(recent_kernel_kills.begin(), recent_kernel_kills.end(),
                                        unix_seconds);
    return kernel_kills - (recent_kernel_kills.end() - later);
  }
};

// Enough for every kill between two readings of the kernel's counters (they are read again at
// once after a traced kill); past it, a kill storm's newest kills may be compared too early.
inline constexpr size_t kRecentKills = 64;

// Thread-safe: events arrive on the probe's poll thread, reads come from scrapes.
class OomTracker {
 public:
  OomTracker(CgroupPathCache* paths, StageResolver* stages, cgroup_key_hierarchy key);

  // Counts and logs the kill; returns its stage and a one-line summary for pages.
  std::pair<Stage, std::string> OnEvent(const oom_event& event);

  std::map<StageId, OomStageTotals> Totals() const;

  // Drops the totals of stages the resolver has forgotten: they count from zero if they
  // come back.
  void KeepStages(const absl::flat_hash_set<StageId>& known);

  // Events whose victim cgroup could not be named (attributed to `unattributed`).
  uint64_t unknown_cgroups() const;

 private:
  std::string VictimCgroupPath(const oom_event& event);

  CgroupPathCache* const paths_;
  StageResolver* const stages_;
  const cgroup_key_hierarchy key_;
  mutable absl::Mutex mu_;
  std::map<StageId, OomStageTotals> totals_ ABSL_GUARDED_BY(mu_);
  uint64_t unknown_cgroups_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace stagewatch
