// Attributes OOM kill events to stages, counts them and logs each one. The kernel's own
// per-cgroup oom_kill counters they are checked against are the sampler's to read
// (Snapshot::oom_kills).
#pragma once

#include <cstdint>
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
};

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
