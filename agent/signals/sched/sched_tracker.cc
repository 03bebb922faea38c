#include "signals/sched/sched_tracker.h"

#include "sparse_maps.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

// The order of values in a cgroup's StageCounters sample.
// The on-CPU time by CPU group follows the histogram, a column a group.
enum : size_t {
  kVoluntary, kNonvoluntary, kOncpu, kExited, kRunqAbove, kRunqSum, kFirstWaits, kFirstWaitSum,
  kRunqSlot0
};
constexpr size_t kOncpuGroup0 = kRunqSlot0 + HIST_SLOTS;

template <typename ByGroup>
std::vector<uint64_t> Flatten(const sched_cgroup_stats& s, const ByGroup& oncpu_by_group) {
  std::vector<uint64_t> v(kOncpuGroup0 + oncpu_by_group.size());
  v[kVoluntary] = s.voluntary_switches;
  v[kNonvoluntary] = s.nonvoluntary_switches;
  v[kOncpu] = s.oncpu_ns;
  v[kExited] = s.exited_processes;
  v[kRunqAbove] = s.runq_latency.above;
  v[kRunqSum] = s.runq_latency.sum;
  v[kFirstWaits] = s.first_waits;
  v[kFirstWaitSum] = s.first_wait_ns;
  for (int i = 0; i < HIST_SLOTS; i++) v[kRunqSlot0 + i] = s.runq_latency.slots[i];
  std::copy(oncpu_by_group.begin(), oncpu_by_group.end(), v.begin() + kOncpuGroup0);
  return v;
}

// Every count of a cgroup's slot moves in the same BPF program as its switch or exit counts.
uint64_t Events(const sched_cgroup_stats& s) {
  return s.voluntary_switches + s.nonvoluntary_switches + s.exited_processes;
}

}  // namespace

SchedTracker::SchedTracker(SchedProbe* probe, CgroupNamer* namer)
    : probe_(probe), namer_(namer), naming_(namer) {
  cgroups_.emplace(kOncpuGroup0 + cpu_groups_);
}

absl::Status SchedTracker::SplitOncpuByCpuGroup(std::vector<uint32_t> group_of_cpu) {
  absl::MutexLock lock(&mu_);
  if (reads_done_ > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the sched tracker has folded ", reads_done_,
        " collections unsplit; split its on-CPU time before the first"));
  }
  cpu_groups_ = 1 + (group_of_cpu.empty()
                         ? 0
                         : *std::max_element(group_of_cpu.begin(), group_of_cpu.end()));
  group_of_cpu_ = std::move(group_of_cpu);
  cgroups_.emplace(kOncpuGroup0 + cpu_groups_);
  return absl::OkStatus();
}

void SchedTracker::Collect() {
  absl::MutexLock lock(&mu_);  // one reader of the maps and per-CPU slots at a time
  CollectCounters();
  overflows_ = {probe_->stats_overflows(), probe_->pair_overflows()};
  slots_after_collect_ = probe_->slots_in_use();
  const auto running = probe_->ReadRunning();
  running_.clear();
  for (const auto& [id, cpus] : running) {
    std::optional<Stage> stage = namer_->StageOf(id);
    running_[stage ? stage->id : kUnattributedStageId] += cpus;
  }
}

bool SchedTracker::SlotsFillingFast() const {
  return probe_->slots_in_use() >= slots_after_collect_.load() + kEarlyCollectSlots;
}

// A collection names and folds only the cgroups and pairs whose counts moved (at 10,000 live
// cgroups nearly all sleep): the rest are still live, unchanged. Where no name changed, it
// reads only their slots too; after a change every slot, as each cgroup is named again.
void SchedTracker::CollectCounters() {
  naming_.Begin();
  const bool renamed = TakeNames();
  reads_done_++;
  const bool whole = renamed;
  FoldCgroups(ReadCgroups(whole), renamed, whole);
  FoldPairs(renamed);
  const auto known = naming_.stages()->KnownStageIds();
  cgroups_->KeepStages(*known);
  pairs_.KeepStages([&known](const StagePair& pair) {
    return known->contains(pair.first) && known->contains(pair.second);
  });
  ForgetDead();
  naming_.End();
}

// Whether the names changed since the last collection: until they do, a cgroup named alive
// in a stage keeps that name, and need not be named again.
bool SchedTracker::TakeNames() {
  std::shared_ptr<const std::vector<NamedCgroup>> names = namer_->Live();
  const bool renamed = names != names_;
  names_ = std::move(names);  // held, so a new object cannot take the old one's address
  return renamed;
}

// The sums live only through the collection: 272 bytes a cgroup kept between collections
// would hold 10 MB after a churn beside 10,000 cgroups (bench/README.md, RSS after a churn).
SchedTracker::CgroupSums SchedTracker::ReadCgroups(bool whole) {
  std::vector<uint32_t> slots = SlotsToRead();  // takes the marks, whole or not
  CgroupSums sums;
  absl::flat_hash_map<uint64_t, uint32_t> slot_of;
  auto add = [&](uint32_t slot, int cpu, const sched_cgroup_stats& copy) {
    CgroupSum& sum = sums[copy.cgroup];
    AddSchedCopy(sum.stats, copy);
    sum.oncpu_by_group.resize(cpu_groups_);
    const size_t at = static_cast<size_t>(cpu);
    sum.oncpu_by_group[at < group_of_cpu_.size() ? group_of_cpu_[at] : 0] += copy.oncpu_ns;
    slot_of[copy.cgroup] = slot;
  };
  if (whole) {
    sums.reserve(cgroup_reads_.size());  // about as many as last time: no rehash as it fills
    probe_->ForEachCgroupCopy(add);
  } else {
    probe_->ForEachCopyOfSlots(slots, add);
  }
  for (const auto& [id, slot] : slot_of) {
    CgroupRead& r = cgroup_reads_[id];
    r.read = reads_done_;
    r.slot = slot;
  }
  last_folded_.read = sums.size();
  return sums;
}

// The slots marked since the last collection and at the one before (a mark is set as a count
// begins: the collection after it reads the count finished), and those of the cgroups whose
// counts moved at the last read or that are not named yet, which are folded again.
std::vector<uint32_t> SchedTracker::SlotsToRead() {
  std::vector<uint32_t> moved = probe_->TakeMovedSlots();
  std::vector<uint32_t> slots = moved;
  slots.insert(slots.end(), moved_before_.begin(), moved_before_.end());
  for (const auto& [id, r] : cgroup_reads_) {
    if (r.moved || !r.named) slots.push_back(r.slot);
  }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  moved_before_ = std::move(moved);
  return slots;
}

bool SchedTracker::NamedAlive(uint64_t id, const std::optional<StageId>& stage) {
  return stage && !naming_.dead().contains(id);
}

void SchedTracker::FoldCgroups(const CgroupSums& sums, bool renamed, bool whole) {
  std::vector<CgroupCounterSample> changed;
  std::vector<uint64_t> gone;
  size_t folded = 0;
  for (auto it = cgroup_reads_.begin(); it != cgroup_reads_.end();) {
    const uint64_t id = it->first;
    CgroupRead& r = it->second;
    if (r.read != reads_done_) {
      if (whole || forgotten_.contains(id)) {  // its slot was given up
        gone.push_back(id);
        cgroup_reads_.erase(it++);
      } else {
        ++it;  // not read: settled, and its slot did not move
      }
      continue;
    }
    ++it;
    // A read can catch a switch half counted (its count bumped, its time not yet): what moved
    // at one read is taken in full at the next one too.
    const CgroupSum& sum = sums.at(id);
    const uint64_t events = Events(sum.stats);
    const bool moved = events != r.events;
    const bool settled = !moved && !r.moved && r.named && !renamed;
    r.events = events;
    r.moved = moved;
    if (settled) continue;
    folded++;
    const std::optional<StageId> stage = naming_.StageFor(id);
    r.named = NamedAlive(id, stage);
    if (stage) {
      changed.push_back({id, *stage, Flatten(sum.stats, sum.oncpu_by_group)});
    } else {
      gone.push_back(id);  // not named this time: out of the sample, as if gone
    }
  }
  forgotten_.clear();
  cgroups_->UpdateChanged(changed, gone);
  ShrinkIfSparse(cgroup_reads_);
  last_folded_.known = cgroup_reads_.size();
  last_folded_.folded = folded;
}

// The matrix is read whole (the kernel cannot say which entries moved), but only pairs whose
// count moved are named and folded; and only when a pair counted since the last read, or the
// names changed (a pair not named yet waits for that): otherwise every count is as folded.
void SchedTracker::FoldPairs(bool renamed) {
  std::vector<CgroupCounterSampleOf<StagePair>> changed;
  std::vector<uint64_t> gone = std::move(forgotten_pair_keys_);
  forgotten_pair_keys_.clear();
  if (!probe_->TakePairsCounted() && !renamed) {
    pairs_.UpdateChanged(changed, gone);
    return;
  }
  for (const auto& [pair, n] : probe_->ReadPreemptionEntries()) {
    auto [it, fresh] = pair_reads_.try_emplace({pair.preempted, pair.preempting});
    PairRead& p = it->second;
    if (fresh) p.key = next_pair_key_++;
    p.read = reads_done_;
    if (!fresh && n == p.count && p.named && !renamed) continue;
    p.count = n;
    const std::optional<StageId> preempted = naming_.StageFor(pair.preempted);
    const std::optional<StageId> preempting = naming_.StageFor(pair.preempting);
    p.named = NamedAlive(pair.preempted, preempted) && NamedAlive(pair.preempting, preempting);
    if (preempted && preempting) {
      changed.push_back({p.key, {*preempted, *preempting}, {n}});
    } else {
      gone.push_back(p.key);
    }
  }
  absl::erase_if(pair_reads_, [&](const auto& entry) {
    if (entry.second.read == reads_done_) return false;
    gone.push_back(entry.second.key);
    return true;
  });
  pairs_.UpdateChanged(changed, gone);
  ShrinkIfSparse(pair_reads_);
}

// Their last counts are folded in above; the next fold retires them.
void SchedTracker::ForgetDead() {
  const std::set<uint64_t>& dead = naming_.dead();
  if (dead.empty()) return;
  probe_->Forget(dead);
  forgotten_.insert(dead.begin(), dead.end());
  // A pair seen again after this counts anew, under a new key.
  absl::erase_if(pair_reads_, [&](const auto& entry) {
    const auto& [pair, read] = entry;
    if (!dead.contains(pair.first) && !dead.contains(pair.second)) return false;
    forgotten_pair_keys_.push_back(read.key);
    return true;
  });
}

std::map<StageId, SchedStageTotals> SchedTracker::Totals() const {
  absl::MutexLock lock(&mu_);
  std::map<StageId, SchedStageTotals> out;
  for (const auto& [stage, v] : cgroups_->Totals()) {
    SchedStageTotals& t = out[stage];
    t.voluntary_switches = v[kVoluntary];
    t.nonvoluntary_switches = v[kNonvoluntary];
    t.oncpu_ns = v[kOncpu];
    t.exited_processes = v[kExited];
    t.runq_above = v[kRunqAbove];
    t.runq_sum_ns = v[kRunqSum];
    t.first_waits = v[kFirstWaits];
    t.first_wait_ns = v[kFirstWaitSum];
    for (int i = 0; i < HIST_SLOTS; i++) t.runq_slots[i] = v[kRunqSlot0 + i];
    t.oncpu_ns_by_cpu_group.assign(v.begin() + kOncpuGroup0, v.end());
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

SchedTracker::Folded SchedTracker::last_folded() const {
  absl::MutexLock lock(&mu_);
  return last_folded_;
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
