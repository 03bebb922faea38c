// Folds the sched probe's per-cgroup aggregates into per-stage totals that never go
// backwards, and the preemption matrix into stage pairs. Collected on the sampler's clock (the
// sched signal's); the collector and the detectors read what the last collection folded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/collection_naming.h"
#include "signals/sched/sched_probe.h"
#include "stages/stage_counters.h"

namespace stagewatch {

struct SchedStageTotals {
  uint64_t voluntary_switches = 0;
  uint64_t nonvoluntary_switches = 0;
  uint64_t oncpu_ns = 0;
  uint64_t exited_processes = 0;
  std::vector<uint64_t> runq_slots = std::vector<uint64_t>(HIST_SLOTS, 0);
  uint64_t runq_above = 0;
  uint64_t runq_sum_ns = 0;
  uint64_t running_now = 0;  // CPUs running one of the stage's tasks at collect time
};

class SchedTracker {
 public:
  SchedTracker(SchedProbe* probe, CgroupNamer* namer);

  // Reads the maps, folds them, drops the entries of cgroups that died, and counts who is on a
  // CPU now (a test run of a BPF program on every CPU, each an interrupt of that CPU).
  void Collect();

  std::map<StageId, SchedStageTotals> Totals() const;
  std::map<StagePair, uint64_t> Preemptions() const;
  uint64_t unknown_cgroups() const;
  // Updates the probe dropped because a map was full, as of the last collection.
  struct Overflows {
    uint64_t stats = 0, pairs = 0;
  };
  Overflows overflows() const;

 private:
  void CollectCounters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t PairKey(std::pair<uint64_t, uint64_t> pair);

  SchedProbe* const probe_;
  CgroupNamer* const namer_;
  mutable absl::Mutex mu_;
  CollectionNaming naming_ ABSL_GUARDED_BY(mu_);
  StageCounters cgroups_ ABSL_GUARDED_BY(mu_);
  // Pairs are folded like stages, each under a key of its own (PairKey) for its cgroup pair.
  StageCountersOf<StagePair> pairs_ ABSL_GUARDED_BY(mu_){1};
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> pair_keys_ ABSL_GUARDED_BY(mu_);
  uint64_t next_pair_key_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<StageId, uint64_t> running_ ABSL_GUARDED_BY(mu_);
  Overflows overflows_ ABSL_GUARDED_BY(mu_);

};

}  // namespace stagewatch
