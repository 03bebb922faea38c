#include "signals/sched/sched_tracker.h"

#include <set>

namespace stagewatch {
namespace {

// The order of values in a cgroup's StageCounters sample.
enum : size_t { kVoluntary, kNonvoluntary, kOncpu, kExited, kRunqAbove, kRunqSum, kRunqSlot0 };
constexpr size_t kWidth = kRunqSlot0 + HIST_SLOTS;

std::vector<uint64_t> Flatten(const sched_cgroup_stats& s) {
  std::vector<uint64_t> v(kWidth);
  v[kVoluntary] = s.voluntary_switches;
  v[kNonvoluntary] = s.nonvoluntary_switches;
  v[kOncpu] = s.oncpu_ns;
  v[kExited] = s.exited_processes;
  v[kRunqAbove] = s.runq_latency.above;
  v[kRunqSum] = s.runq_latency.sum;
  for (int i = 0; i < HIST_SLOTS; i++) v[kRunqSlot0 + i] = s.runq_latency.slots[i];
  return v;
}

}  // namespace

SchedTracker::SchedTracker(SchedProbe* probe, CgroupNamer* namer)
    : probe_(probe), namer_(namer), naming_(namer), cgroups_(kWidth) {}

uint64_t SchedTracker::PairKey(std::pair<uint64_t, uint64_t> pair) {
  auto [it, inserted] = pair_keys_.try_emplace(pair, next_pair_key_);
  if (inserted) next_pair_key_++;
  return it->second;
}

void SchedTracker::Collect() {
  absl::MutexLock lock(&mu_);  // one reader of the maps and per-CPU slots at a time
  CollectCounters();
  overflows_ = {probe_->stats_overflows(), probe_->pair_overflows()};
  const auto running = probe_->ReadRunning();
  running_.clear();
  for (const auto& [id, cpus] : running) {
    std::optional<Stage> stage = namer_->StageOf(id);
    running_[stage ? stage->id : kUnattributedStageId] += cpus;
  }
}

void SchedTracker::CollectCounters() {
  naming_.Begin();
  const auto cgroups = probe_->ReadCgroups();
  const auto pairs = probe_->ReadPreemptions();

  std::vector<CgroupCounterSample> samples;
  for (const auto& [id, stats] : cgroups) {
    if (std::optional<StageId> stage = naming_.StageFor(id)) {
      samples.push_back({id, *stage, Flatten(stats)});
    }
  }
  cgroups_.Update(samples);

  std::vector<CgroupCounterSampleOf<StagePair>> pair_samples;
  for (const auto& [pair, n] : pairs) {
    std::optional<StageId> preempted = naming_.StageFor(pair.first);
    std::optional<StageId> preempting = naming_.StageFor(pair.second);
    if (preempted && preempting) {
      pair_samples.push_back({PairKey(pair), {*preempted, *preempting}, {n}});
    }
  }
  pairs_.Update(pair_samples);
  const absl::flat_hash_set<StageId> known = naming_.stages()->KnownStageIds();
  cgroups_.KeepStages(known);
  pairs_.KeepStages([&known](const StagePair& pair) {
    return known.contains(pair.first) && known.contains(pair.second);
  });

  // Their last counts are folded in above; the next Update retires them.
  const std::set<uint64_t>& dead = naming_.dead();
  probe_->Forget(dead);
  for (auto it = pair_keys_.begin(); it != pair_keys_.end();) {
    if (dead.contains(it->first.first) || dead.contains(it->first.second)) {
      it = pair_keys_.erase(it);
    } else {
      ++it;
    }
  }
  naming_.End();
}

std::map<StageId, SchedStageTotals> SchedTracker::Totals() const {
  absl::MutexLock lock(&mu_);
  std::map<StageId, SchedStageTotals> out;
  for (const auto& [stage, v] : cgroups_.Totals()) {
    SchedStageTotals& t = out[stage];
    t.voluntary_switches = v[kVoluntary];
    t.nonvoluntary_switches = v[kNonvoluntary];
    t.oncpu_ns = v[kOncpu];
    t.exited_processes = v[kExited];
    t.runq_above = v[kRunqAbove];
    t.runq_sum_ns = v[kRunqSum];
    for (int i = 0; i < HIST_SLOTS; i++) t.runq_slots[i] = v[kRunqSlot0 + i];
  }
  for (const auto& [stage, cpus] : running_) out[stage].running_now = cpus;
  return out;
}

std::map<StagePair, uint64_t> SchedTracker::Preemptions() const {
  absl::MutexLock lock(&mu_);
  std::map<StagePair, uint64_t> out;
  for (const auto& [pair, v] : pairs_.Totals()) out[pair] += v[0];
  return out;
}

SchedTracker::Overflows SchedTracker::overflows() const {
  absl::MutexLock lock(&mu_);
  return overflows_;
}

uint64_t SchedTracker::unknown_cgroups() const {
  absl::MutexLock lock(&mu_);
  return naming_.unknown();
}

}  // namespace stagewatch
