#include "signals/memory/memory_tracker.h"

namespace stagewatch {
namespace {

// The order of values in a cgroup's StageCounters sample.
enum : size_t { kMinor, kMajor, kStallAbove, kStallSum, kStallSlot0 };
constexpr size_t kWidth = kStallSlot0 + HIST_SLOTS;

std::vector<uint64_t> Flatten(const MemoryCgroupCounters& c) {
  std::vector<uint64_t> v(kWidth);
  v[kMinor] = c.minor_faults;
  v[kMajor] = c.major_faults;
  v[kStallAbove] = c.reclaim_stall_ns.above;
  v[kStallSum] = c.reclaim_stall_ns.sum;
  for (int i = 0; i < HIST_SLOTS; i++) v[kStallSlot0 + i] = c.reclaim_stall_ns.slots[i];
  return v;
}

}  // namespace

MemoryTracker::MemoryTracker(MemoryProbe* probe, CgroupNamer* namer)
    : probe_(probe), naming_(namer), cgroups_(kWidth) {}

void MemoryTracker::CollectForMajorFaults() {
  {
    absl::MutexLock lock(&mu_);
    if (probe_->major_faults_seen() == major_seen_) return;
  }
  Collect();
}

void MemoryTracker::Collect() {
  absl::MutexLock lock(&mu_);
  // Read first: a fault counted while the map is read is news to the next call.
  major_seen_ = probe_->major_faults_seen();
  overflows_ = {probe_->cgroup_overflows(), probe_->reclaim_overflows()};
  naming_.Begin();
  std::vector<CgroupCounterSample> samples;
  for (const MemoryCgroupCounters& c : probe_->Read()) {
    if (std::optional<StageId> stage = naming_.StageFor(c.cgroup_id)) {
      samples.push_back({c.cgroup_id, *stage, Flatten(c)});
    }
  }
  cgroups_.Update(samples);
  cgroups_.KeepStages(*naming_.stages()->KnownStageIds());
  for (uint64_t id : naming_.dead()) probe_->Delete(id);  // folded above, retired next time
  naming_.End();
}

std::map<StageId, MemoryStageTotals> MemoryTracker::Totals() const {
  absl::MutexLock lock(&mu_);
  std::map<StageId, MemoryStageTotals> out;
  for (const auto& [stage, v] : cgroups_.Totals()) {
    MemoryStageTotals& t = out[stage];
    t.minor_faults = v[kMinor];
    t.major_faults = v[kMajor];
    t.stall_above = v[kStallAbove];
    t.stall_sum_ns = v[kStallSum];
    for (int i = 0; i < HIST_SLOTS; i++) t.stall_slots[i] = v[kStallSlot0 + i];
  }
  return out;
}

MemoryTracker::Overflows MemoryTracker::overflows() const {
  absl::MutexLock lock(&mu_);
  return overflows_;
}

uint64_t MemoryTracker::unknown_cgroups() const {
  absl::MutexLock lock(&mu_);
  return naming_.unknown();
}

}  // namespace stagewatch
