// Attributes OOM kill events to stages, counts them, logs each one, and cross-checks the
// counts against the kernel's own per-cgroup oom_kill counters.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cgroup/path_cache.h"
#include "bpf/cgroup_key.h"
#include "bpf/oom.h"
#include "stages/stage_counters.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

struct OomStageTotals {
  uint64_t kernel_kills = 0;     // chosen by the kernel's OOM killer
  uint64_t userspace_kills = 0;  // SIGKILLs from configured user-space killers
  double last_kill_unix_seconds = 0;
};

// Thread-safe: events arrive on the probe's poll thread, reads come from scrapes.
class OomTracker {
 public:
  OomTracker(CgroupPathCache* paths, StageResolver* stages, cgroup_key_hierarchy key);

  // Counts and logs the kill; returns its stage and a one-line summary for pages.
  std::pair<Stage, std::string> OnEvent(const oom_event& event);

  std::map<StageId, OomStageTotals> Totals() const;

  // Reads every cgroup's own oom_kill counter (v1 memory.oom_control, v2
  // memory.events.local) and folds them per stage, counting from the first call. A file per
  // cgroup is too much for every scrape at a thousand cgroups, and the counters move only with
  // kills: they are read while kill events are recent, else at most once per
  // kKernelCountsInterval, which still catches kills no event reported.
  absl::Status RefreshKernelCounts();
  static constexpr absl::Duration kKernelCountsInterval = absl::Seconds(60);
  static constexpr absl::Duration kAfterKillEvent = absl::Seconds(5);
  std::map<StageId, uint64_t> KernelCounts() const;

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
  absl::Time last_kill_event_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time kernel_counts_read_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  StageCounters kernel_counts_ ABSL_GUARDED_BY(mu_){1, /*count_from_first_snapshot=*/true};
};

}  // namespace stagewatch
