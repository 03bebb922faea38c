// Folds the placement probe's per-cgroup migrations into per-stage totals that never go
// backwards. Collected on the sampler's clock (the placement signal's); the collector reads
// what the last collection folded.
#pragma once

#include <cstdint>
#include <map>

#include "absl/synchronization/mutex.h"
#include "cgroup/collection_naming.h"
#include "signals/placement/placement_probe.h"
#include "stages/stage_counters.h"

namespace stagewatch {

struct PlacementStageTotals {
  uint64_t node_migrations = 0;
  uint64_t cross_node_migrations = 0;
};

class PlacementTracker {
 public:
  PlacementTracker(PlacementProbe* probe, CgroupNamer* namer);

  // Reads the probe's map, folds it, and drops the entries of cgroups that died. The map
  // holds only cgroups whose tasks migrated since their entry was made: read whole.
  void Collect();
  std::map<StageId, PlacementStageTotals> Totals() const;
  uint64_t unknown_cgroups() const;
  // Updates the probe dropped because its map was full, as of the last collection.
  uint64_t overflows() const;

 private:
  PlacementProbe* const probe_;
  mutable absl::Mutex mu_;
  CollectionNaming naming_ ABSL_GUARDED_BY(mu_);
  StageCounters cgroups_ ABSL_GUARDED_BY(mu_);
  uint64_t overflows_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace stagewatch
