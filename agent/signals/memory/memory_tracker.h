// Folds the memory probe's per-cgroup page faults and reclaim stalls into per-stage totals
// that never go backwards. Collected on the sampler's clock (the memory signal's); the
// collector and the detectors read what the last collection folded.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cgroup/collection_naming.h"
#include "signals/memory/memory_probe.h"
#include "stages/stage_counters.h"

namespace stagewatch {

struct MemoryStageTotals {
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
  std::vector<uint64_t> stall_slots = std::vector<uint64_t>(HIST_SLOTS, 0);
  uint64_t stall_above = 0;
  uint64_t stall_sum_ns = 0;
};

class MemoryTracker {
 public:
  MemoryTracker(MemoryProbe* probe, CgroupNamer* namer);

  // Reads the probe's map, folds it, and drops the entries of cgroups that died.
  void Collect();
  // Collect(), unless no major fault was counted in any cgroup since the last collection: then
  // every stage's major faults stand as Totals() gives them, exactly, and no map is read (the
  // fault-storm detector's feed, every second; an idle host faults in nothing from disk).
  void CollectForMajorFaults();
  std::map<StageId, MemoryStageTotals> Totals() const;
  uint64_t unknown_cgroups() const;
  // Whether the probe counts minor faults (else its Totals() have major faults only).
  bool counts_minor_faults() const { return probe_->counts_minor_faults(); }
  // Updates the probe dropped because a map was full, as of the last collection.
  struct Overflows {
    uint64_t cgroups = 0, reclaimers = 0;
  };
  Overflows overflows() const;

 private:
  MemoryProbe* const probe_;
  mutable absl::Mutex mu_;
  CollectionNaming naming_ ABSL_GUARDED_BY(mu_);
  StageCounters cgroups_ ABSL_GUARDED_BY(mu_);
  // major_faults_seen() as the last collection began; none yet: the maximum.
  uint64_t major_seen_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  Overflows overflows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
