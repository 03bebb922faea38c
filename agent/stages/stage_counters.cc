#include "stages/stage_counters.h"

#include <algorithm>

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
uint64_t* StageCountersOf<Key>::Total(const Key& stage) {
  auto at = std::lower_bound(stages_.begin(), stages_.end(), stage);
  const size_t i = at - stages_.begin();
  if (at == stages_.end() || *at != stage) {
    stages_.insert(at, stage);
    totals_.insert(totals_.begin() + i * width_, width_, 0);
  }
  return totals_.data() + i * width_;
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
    live_.erase(it++);  // what it counted stays in its stage's total
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
    if (it != live_.end()) live_.erase(it);  // what it counted stays in its stage's total
  }
  ShrinkIfSparse(live_);
  skip_baseline_ = true;
}

template <typename Key>
void StageCountersOf<Key>::Apply(const CgroupCounterSampleOf<Key>& sample, uint64_t update) {
  auto value = [&](size_t i) { return i < sample.values.size() ? sample.values[i] : 0; };
  auto it = live_.find(sample.cgroup_id);
  if (it == live_.end()) {
    std::vector<uint64_t> values = Normalised(sample.values, width_);
    // Counts from before the agent started belong to no run we saw: only the first
    // snapshot is baselined, a cgroup born later counts from its birth.
    std::vector<uint64_t> baseline = skip_baseline_ ? std::vector<uint64_t>(width_, 0) : values;
    uint64_t* total = Total(sample.stage);  // stages stay once seen
    for (size_t i = 0; i < width_; ++i) total[i] += values[i] - baseline[i];
    live_.emplace(sample.cgroup_id, Live{sample.stage, std::move(values), std::move(baseline),
                                         update});
    return;
  }
  Live& cgroup = it->second;
  if (cgroup.seen_in == update) return;  // duplicate id: first one wins
  cgroup.seen_in = update;
  if (cgroup.stage != sample.stage) {
    // What was counted so far stays with the old stage; the new one counts from here. A
    // value that dropped restarted, so all of it is new and belongs to the new stage.
    std::vector<uint64_t> values = Normalised(sample.values, width_);
    uint64_t* total = Total(sample.stage);
    for (size_t i = 0; i < width_; ++i) {
      cgroup.baseline[i] = values[i] < cgroup.last[i] ? 0 : values[i];
      total[i] += values[i] - cgroup.baseline[i];
    }
    cgroup.stage = sample.stage;
    cgroup.last = std::move(values);
    return;
  }
  // Per value: one that dropped restarted; what it had counted stays, and it counts anew from 0.
  uint64_t* total = nullptr;
  for (size_t i = 0; i < width_; ++i) {
    const uint64_t v = value(i);
    if (v == cgroup.last[i]) continue;
    if (!total) total = Total(cgroup.stage);
    if (v < cgroup.last[i]) {
      cgroup.baseline[i] = 0;
      total[i] += v;
    } else {
      total[i] += v - cgroup.last[i];
    }
    cgroup.last[i] = v;
  }
}

template <typename Key>
void StageCountersOf<Key>::KeepStages(const std::function<bool(const Key&)>& keep) {
  // Every live cgroup's stage has a total (stages stay once seen): when none of those goes, no
  // cgroup does, and the pass over the live ones is saved.
  size_t kept = 0;
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (!keep(stages_[i])) continue;
    if (kept != i) {
      stages_[kept] = stages_[i];
      std::copy_n(totals_.begin() + i * width_, width_, totals_.begin() + kept * width_);
    }
    kept++;
  }
  if (kept == stages_.size()) return;
  stages_.resize(kept);
  totals_.resize(kept * width_);
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
  ForEachTotal([&totals](const Key& stage, absl::Span<const uint64_t> total) {
    totals.emplace_hint(totals.end(), stage, std::vector<uint64_t>(total.begin(), total.end()));
  });
  return totals;
}

template <typename Key>
void StageCountersOf<Key>::ForEachTotal(
    absl::FunctionRef<void(const Key&, absl::Span<const uint64_t>)> fn) const {
  for (size_t i = 0; i < stages_.size(); ++i) {
    fn(stages_[i], absl::MakeConstSpan(totals_.data() + i * width_, width_));
  }
}

template class StageCountersOf<StageId>;
template class StageCountersOf<StagePair>;

}  // namespace stagewatch
