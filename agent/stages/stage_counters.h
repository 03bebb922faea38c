// Folds per-cgroup cumulative counters into per-stage totals that never go backwards.
//
// The kernel side (and cgroupfs) count per cgroup. Cgroups die, their map entries are
// evicted, and a stage's cgroup is recreated under a new id. Each Update() takes a full
// snapshot of the live cgroups; a cgroup missing from it is retired: what it counted stays in
// its stage's totals. A cgroup whose value drops (its counter restarted) keeps what it counted
// and is counted again from zero.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "stages/stage_id.h"

namespace stagewatch {

// Counts are folded under a StageId, or a StagePair (preempted, preempting).

template <typename Key>
struct CgroupCounterSampleOf {
  uint64_t cgroup_id = 0;
  Key stage;
  std::vector<uint64_t> values;  // cumulative, `width` entries
};

template <typename Key>
class StageCountersOf {
 public:
  // `width`: values per cgroup. With `count_from_first_snapshot`, what cgroups in the very
  // first snapshot had already counted is subtracted, so totals start at zero when the
  // agent starts (used for kernel counters that predate the agent).
  explicit StageCountersOf(size_t width, bool count_from_first_snapshot = false);

  // Not thread-safe; callers serialise.
  void Update(absl::Span<const CgroupCounterSampleOf<Key>> live);

  // A snapshot of only what may have changed since the last update, for callers that can tell
  // which cgroups did not move: `changed` are taken as in Update(), `gone` are retired (also
  // when in `changed`), and every other live cgroup stays live with its last values. Costs a
  // changed or gone cgroup each, not a live one each.
  void UpdateChanged(absl::Span<const CgroupCounterSampleOf<Key>> changed,
                     absl::Span<const uint64_t> gone);

  // stage → totals (`width` values). Stages stay once seen.
  std::map<Key, std::vector<uint64_t>> Totals() const;
  // The same, stage by stage in order, without building the map (a per-sample caller's).
  void ForEachTotal(absl::FunctionRef<void(const Key&, absl::Span<const uint64_t>)> fn) const;

  // Drops every stage `keep` refuses, totals and cgroups: forgotten stages, which count from
  // zero if they come back.
  void KeepStages(const std::function<bool(const Key&)>& keep);
  void KeepStages(const absl::flat_hash_set<StageId>& known)
    requires std::same_as<Key, StageId>;

  size_t live_cgroups() const { return live_.size(); }

 private:
  struct Live {
    Key stage;
    std::vector<uint64_t> last;      // last raw values seen
    std::vector<uint64_t> baseline;  // subtracted (first-snapshot baseline)
    uint64_t seen_in = 0;            // the last Update() whose snapshot had it
  };
  // Takes one cgroup's sample into the update numbered `update`.
  void Apply(const CgroupCounterSampleOf<Key>& sample, uint64_t update);
  // The stage's totals (`width_` values), added at zero if it is new. Valid until the next
  // stage is added.
  uint64_t* Total(const Key& stage);

  const size_t width_;
  bool skip_baseline_;
  uint64_t updates_ = 0;  // Update() calls: marks the cgroups of the current snapshot
  absl::flat_hash_map<uint64_t, Live> live_;
  // Every stage seen, in order, and its totals: what its gone cgroups counted and what its live
  // ones count now, kept as they change. A cgroup that goes leaves its count there, so only a
  // change of value moves a total, and a walk of the totals (each sample, over every stage) is
  // one pass over contiguous memory.
  std::vector<Key> stages_;
  std::vector<uint64_t> totals_;  // `width_` a stage, in stages_' order
};

extern template class StageCountersOf<StageId>;
extern template class StageCountersOf<StagePair>;

using CgroupCounterSample = CgroupCounterSampleOf<StageId>;
using StageCounters = StageCountersOf<StageId>;

}  // namespace stagewatch
