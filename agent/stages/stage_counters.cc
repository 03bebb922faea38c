#include "stages/stage_counters.h"

#include "sparse_maps.h"
namespace stagewatch {
namespace {

// Samples are meant to carry exactly `width` values; a short one is padded with zeros and a
// long one cut, so one malformed sample cannot corrupt the stage's vector arithmetic.
std::vector<uint64_t> Normalised(const std::vector<uint64_t>& values, size_t width) {
  std::vector<uint64_t> out(width, 0);
  for (size_t i = 0; i < width && i < values.size(); ++i) out[i] = values[i];
  return out;
}

}  // namespace

template <typename Key>
StageCountersOf<Key>::StageCountersOf(size_t width, bool count_from_first_snapshot)
    : width_(width), skip_baseline_(!count_from_first_snapshot) {}

template <typename Key>
std::vector<uint64_t>& StageCountersOf<Key>::LiveSum(const Key& stage) {
  std::vector<uint64_t>& sum = live_sums_[stage];
  sum.resize(width_, 0);
  return sum;
}

template <typename Key>
void StageCountersOf<Key>::Retire(const Live& cgroup) {
  std::vector<uint64_t>& retired = retired_[cgroup.stage];
  std::vector<uint64_t>& sum = LiveSum(cgroup.stage);
  retired.resize(width_, 0);
  for (size_t i = 0; i < width_; ++i) {
    retired[i] += cgroup.last[i] - cgroup.baseline[i];
    sum[i] -= cgroup.last[i] - cgroup.baseline[i];
  }
}

template <typename Key>
void StageCountersOf<Key>::AddLive(const Live& cgroup) {
  std::vector<uint64_t>& sum = LiveSum(cgroup.stage);
  for (size_t i = 0; i < width_; ++i) sum[i] += cgroup.last[i] - cgroup.baseline[i];
}

template <typename Key>
void StageCountersOf<Key>::Update(absl::Span<const CgroupCounterSampleOf<Key>> live) {
  // Called once a sample over every cgroup: a cgroup whose values did not move costs a
  // lookup and a comparison, no allocation.
  const uint64_t update = ++updates_;
  for (const CgroupCounterSampleOf<Key>& sample : live) Apply(sample, update);
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second.seen_in == update) {
      ++it;
      continue;
    }
    Retire(it->second);
    live_.erase(it++);
  }
  ShrinkIfSparse(live_);
  skip_baseline_ = true;
}

template <typename Key>
void StageCountersOf<Key>::UpdateChanged(absl::Span<const CgroupCounterSampleOf<Key>> changed,
                                         absl::Span<const uint64_t> gone) {
  const uint64_t update = ++updates_;
  for (const CgroupCounterSampleOf<Key>& sample : changed) Apply(sample, update);
  for (uint64_t id : gone) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    Retire(it->second);
    live_.erase(it);
  }
  ShrinkIfSparse(live_);
  skip_baseline_ = true;
}

template <typename Key>
void StageCountersOf<Key>::Apply(const CgroupCounterSampleOf<Key>& sample, uint64_t update) {
  auto value = [&](size_t i) { return i < sample.values.size() ? sample.values[i] : 0; };
  auto it = live_.find(sample.cgroup_id);
  if (it == live_.end()) {
    retired_.try_emplace(sample.stage, width_, 0);  // stages stay once seen
    std::vector<uint64_t> values = Normalised(sample.values, width_);
    // Counts from before the agent started belong to no run we saw: only the first
    // snapshot is baselined, a cgroup born later counts from its birth.
    std::vector<uint64_t> baseline = skip_baseline_ ? std::vector<uint64_t>(width_, 0) : values;
    AddLive(live_.emplace(sample.cgroup_id,
                          Live{sample.stage, values, std::move(baseline), update})
                .first->second);
    return;
  }
  Live& cgroup = it->second;
  if (cgroup.seen_in == update) return;  // duplicate id: first one wins
  cgroup.seen_in = update;
  if (cgroup.stage != sample.stage) {
    // What was counted so far stays with the old stage; the new one counts from here. A
    // value that dropped restarted, so all of it is new and belongs to the new stage.
    retired_.try_emplace(sample.stage, width_, 0);
    Retire(cgroup);
    std::vector<uint64_t> values = Normalised(sample.values, width_);
    for (size_t i = 0; i < width_; ++i) {
      cgroup.baseline[i] = values[i] < cgroup.last[i] ? 0 : values[i];
    }
    cgroup.stage = sample.stage;
    cgroup.last = std::move(values);
    AddLive(cgroup);
    return;
  }
  // Per value: one that dropped restarted; keep what it had counted and count anew from 0.
  std::vector<uint64_t>* retired = nullptr;
  std::vector<uint64_t>* sum = nullptr;
  for (size_t i = 0; i < width_; ++i) {
    const uint64_t v = value(i);
    if (v == cgroup.last[i]) continue;
    if (!sum) sum = &LiveSum(cgroup.stage);
    (*sum)[i] -= cgroup.last[i] - cgroup.baseline[i];
    if (v < cgroup.last[i]) {
      if (!retired) retired = &retired_[cgroup.stage];
      retired->resize(width_, 0);
      (*retired)[i] += cgroup.last[i] - cgroup.baseline[i];
      cgroup.baseline[i] = 0;
    }
    cgroup.last[i] = v;
    (*sum)[i] += cgroup.last[i] - cgroup.baseline[i];
  }
}

template <typename Key>
void StageCountersOf<Key>::KeepStages(const std::function<bool(const Key&)>& keep) {
  // Every live cgroup's stage is in retired_ (stages stay once seen): when none of those goes,
  // no cgroup does, and the pass over the live ones is saved.
  if (std::erase_if(retired_, [&](const auto& entry) { return !keep(entry.first); }) == 0) return;
  std::erase_if(live_sums_, [&](const auto& entry) { return !keep(entry.first); });
  absl::erase_if(live_, [&](const auto& entry) { return !keep(entry.second.stage); });
}

template <typename Key>
void StageCountersOf<Key>::KeepStages(const absl::flat_hash_set<StageId>& known)
  requires std::same_as<Key, StageId>
{
  KeepStages([&known](StageId stage) { return known.contains(stage); });
}

template <typename Key>
std::map<Key, std::vector<uint64_t>> StageCountersOf<Key>::Totals() const {
  std::map<Key, std::vector<uint64_t>> totals;
  ForEachTotal([&totals](const Key& stage, const std::vector<uint64_t>& total) {
    totals.emplace_hint(totals.end(), stage, total);
  });
  return totals;
}

template <typename Key>
void StageCountersOf<Key>::ForEachTotal(
    absl::FunctionRef<void(const Key&, const std::vector<uint64_t>&)> fn) const {
  // Both maps are in stage order: one walk of each.
  std::vector<uint64_t> total(width_);
  auto retired = retired_.begin();
  auto live = live_sums_.begin();
  while (retired != retired_.end() || live != live_sums_.end()) {
    const bool from_retired =
        retired != retired_.end() && (live == live_sums_.end() || !(live->first < retired->first));
    const bool from_live =
        live != live_sums_.end() && (retired == retired_.end() || !(retired->first < live->first));
    const Key& stage = from_retired ? retired->first : live->first;
    for (size_t i = 0; i < width_; ++i) {
      total[i] = (from_retired && i < retired->second.size() ? retired->second[i] : 0) +
                 (from_live ? live->second[i] : 0);
    }
    fn(stage, total);
    if (from_retired) ++retired;
    if (from_live) ++live;
  }
}

template class StageCountersOf<StageId>;
template class StageCountersOf<StagePair>;

}  // namespace stagewatch
