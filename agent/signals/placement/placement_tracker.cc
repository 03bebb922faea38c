#include "signals/placement/placement_tracker.h"

#include <vector>

namespace stagewatch {
namespace {

// The order of values in a cgroup's StageCounters sample.
enum : size_t { kNode, kCrossNode, kWidth };

}  // namespace

PlacementTracker::PlacementTracker(PlacementProbe* probe, CgroupNamer* namer)
    : probe_(probe), naming_(namer), cgroups_(kWidth) {}

void PlacementTracker::Collect() {
  absl::MutexLock lock(&mu_);
  overflows_ = probe_->overflows();
  naming_.Begin();
  std::vector<CgroupCounterSample> samples;
  for (const PlacementCgroupCounts& c : probe_->Read()) {
    if (std::optional<StageId> stage = naming_.StageFor(c.cgroup_id)) {
      samples.push_back({c.cgroup_id, *stage, {c.node_migrations, c.cross_node_migrations}});
    }
  }
  cgroups_.Update(samples);
  cgroups_.KeepStages(naming_.stages()->KnownStageIds());
  for (uint64_t id : naming_.dead()) probe_->Delete(id);  // folded above, retired next time
  naming_.End();
}

std::map<StageId, PlacementStageTotals> PlacementTracker::Totals() const {
  absl::MutexLock lock(&mu_);
  std::map<StageId, PlacementStageTotals> out;
  for (const auto& [stage, v] : cgroups_.Totals()) out[stage] = {v[kNode], v[kCrossNode]};
  return out;
}

uint64_t PlacementTracker::overflows() const {
  absl::MutexLock lock(&mu_);
  return overflows_;
}

uint64_t PlacementTracker::unknown_cgroups() const {
  absl::MutexLock lock(&mu_);
  return naming_.unknown();
}

}  // namespace stagewatch
