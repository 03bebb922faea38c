#include "signals/placement/placement_tracker.h"

#include <vector>

#include "sparse_maps.h"

namespace stagewatch {
namespace {

// The order of values in a cgroup's StageCounters sample.
enum : size_t { kNode, kCrossNode, kWidth };

}  // namespace

PlacementTracker::PlacementTracker(PlacementProbe* probe, CgroupNamer* namer)
    : probe_(probe), namer_(namer), naming_(namer), cgroups_(kWidth) {}

// As the sched tracker's fold: until the namer's names change, a cgroup named alive in a
// stage keeps that name, and one whose counts stand still stays live and unchanged.
void PlacementTracker::Collect() {
  absl::MutexLock lock(&mu_);
  overflows_ = probe_->overflows();
  naming_.Begin();
  std::shared_ptr<const std::vector<NamedCgroup>> names = namer_->Live();
  const bool renamed = names != names_;
  names_ = std::move(names);  // held, so a new object cannot take the old one's address
  reads_done_++;
  std::vector<CgroupCounterSample> changed;
  std::vector<uint64_t> gone;
  size_t folded = 0;
  for (const PlacementCgroupCounts& c : probe_->Read()) {
    auto [it, fresh] = cgroup_reads_.try_emplace(c.cgroup_id);
    CgroupRead& r = it->second;
    r.read = reads_done_;
    const bool moved = fresh || c.node_migrations != r.node ||
                       c.cross_node_migrations != r.cross_node;
    if (!moved && r.named && !renamed) continue;
    folded++;
    r.node = c.node_migrations;
    r.cross_node = c.cross_node_migrations;
    const std::optional<StageId> stage = naming_.StageFor(c.cgroup_id);
    r.named = stage && !naming_.dead().contains(c.cgroup_id);
    if (stage) {
      changed.push_back({c.cgroup_id, *stage, {r.node, r.cross_node}});
    } else {
      gone.push_back(c.cgroup_id);  // not named this time: out of the sample, as if gone
    }
  }
  absl::erase_if(cgroup_reads_, [&](const auto& entry) {
    if (entry.second.read == reads_done_) return false;
    gone.push_back(entry.first);  // its entry was deleted: retired
    return true;
  });
  ShrinkIfSparse(cgroup_reads_);
  last_folded_ = {cgroup_reads_.size(), folded};
  cgroups_.UpdateChanged(changed, gone);
  cgroups_.KeepStages(*naming_.stages()->KnownStageIds());
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

PlacementTracker::Folded PlacementTracker::last_folded() const {
  absl::MutexLock lock(&mu_);
  return last_folded_;
}

uint64_t PlacementTracker::unknown_cgroups() const {
  absl::MutexLock lock(&mu_);
  return naming_.unknown();
}

}  // namespace stagewatch
