// Folds the placement probe's per-cgroup migrations into per-stage totals that never go
// backwards. Collected on the sampler's clock (the placement signal's); the collector reads
// what the last collection folded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

  // Reads the probe's map, folds it, and drops the entries of cgroups that died. The map is
  // read whole (a cgroup has an entry once its tasks migrated), but only the cgroups whose
  // counts moved, or whose names may have, are named and folded: a sleeping cgroup costs a read.
  void Collect();
  std::map<StageId, PlacementStageTotals> Totals() const;
  uint64_t unknown_cgroups() const;
  // Updates the probe dropped because its map was full, as of the last collection.
  uint64_t overflows() const;
  // Of the cgroups the last collection read, how many it named and folded.
  struct Folded {
    size_t read = 0, folded = 0;
  };
  Folded last_folded() const;

 private:
  // One cgroup's entry, from read to read.
  struct CgroupRead {
    uint64_t read = 0;  // the last read that found it
    uint64_t node = 0, cross_node = 0;
    bool named = false;  // the last naming found it alive in a stage
  };

  PlacementProbe* const probe_;
  CgroupNamer* const namer_;
  mutable absl::Mutex mu_;
  CollectionNaming naming_ ABSL_GUARDED_BY(mu_);
  // The namer's names at the last collection: one object until they change.
  std::shared_ptr<const std::vector<NamedCgroup>> names_ ABSL_GUARDED_BY(mu_);
  uint64_t reads_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, CgroupRead> cgroup_reads_ ABSL_GUARDED_BY(mu_);
  StageCounters cgroups_ ABSL_GUARDED_BY(mu_);
  uint64_t overflows_ ABSL_GUARDED_BY(mu_) = 0;
  Folded last_folded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
