// Each stage's page faults from the kernel's own per-cgroup counters: memory.stat pgfault and
// pgmajfault of its top cgroups (hierarchical: v2's plain keys, v1's total_*), read by the
// sampler anyway. No program runs per fault.
//
// A top's hierarchical count includes the tops of other stages nested beneath it, so each top
// counts its own less theirs; and, as the kernel keeps a removed cgroup's faults in its
// ancestors' counts, less what its nested tops had counted when they went. A top's own count
// never goes backwards (two files are not read at one instant), and a top that could not be
// read this sample keeps its last count: StageCounters folds tops that come and go, so a
// stage's totals never go backwards.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "cgroup/cgroup_namer.h"
#include "sampler/sample_snapshot.h"
#include "stages/stage_counters.h"

namespace stagewatch {

// One stage top's memory.stat as this sample read it (or its last full reading).
struct TopFaultReading {
  NamedCgroup top;
  std::optional<uint64_t> pgfault, pgmajfault;  // none: not read, or no memory controller
};

// The tops that enclose another top or lie beneath one. Their counts are taken one from
// another, so the sampler reads each of them in full every sample, the enclosing ones first
// (a fault between two reads then shows late, never twice).
absl::flat_hash_set<uint64_t> NestedTops(const std::vector<NamedCgroup>& tops);

class MemcgFaults {
 public:
  // One sample: every stage top, read or not. `known`: the stages still known.
  void Update(const std::vector<TopFaultReading>& tops, const absl::flat_hash_set<StageId>& known);
  // Stages any of whose tops has had memcg figures: their faults since each top was made.
  StageMap<StageFaults> Totals() const;
  // Stages with a top that has never had memcg figures (no memory controller there).
  const StageSet& uncovered() const { return uncovered_; }

 private:
  using Pair = std::array<uint64_t, 2>;  // pgfault (every fault), pgmajfault
  // When the tops changed: folds the gone ones into their enclosing tops' departed_, and
  // finds each one's enclosing top.
  void Retop(const std::vector<TopFaultReading>& tops);
  struct Top {
    uint64_t enclosing = 0;  // the nearest top above it, 0 if none
    Pair reading{};          // hierarchical, as last read
    Pair own{};              // less the nested tops', never lower than before
    bool read = false;       // has had memcg figures
  };
  absl::flat_hash_map<uint64_t, Top> tops_;
  // By top: what its nested tops had counted when they went (still in its hierarchical count).
  absl::flat_hash_map<uint64_t, Pair> departed_;
  StageCounters counters_{2};
  std::vector<CgroupCounterSample> samples_;  // counters_'s input, kept for its values' room
  StageSet uncovered_;
};

}  // namespace stagewatch
