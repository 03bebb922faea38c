// Folds the sched probe's per-cgroup aggregates into per-stage totals that never go
// backwards, and the preemption matrix into stage pairs. Collected on the sampler's clock (the
// sched signal's); the collector and the detectors read what the last collection folded.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/collection_naming.h"
#include "signals/sched/sched_probe.h"
#include "stages/stage_counters.h"

namespace stagewatch {

// A churn's new cgroups that make a collection early: an eighth of the probe's slots. At
// 10,000 live cgroups a churn of 1,700 a second (cgroup_scale.sh's bursts) filled the rest
// between two collections 3.5 s apart.
inline constexpr uint64_t kEarlyCollectSlots = SCHED_MAX_CGROUPS / 8;

struct SchedStageTotals {
  uint64_t voluntary_switches = 0;
  uint64_t nonvoluntary_switches = 0;
  uint64_t oncpu_ns = 0;
  uint64_t exited_processes = 0;
  std::vector<uint64_t> runq_slots = std::vector<uint64_t>(HIST_SLOTS, 0);
  uint64_t runq_above = 0;
  uint64_t runq_sum_ns = 0;
  // Of those waits, new tasks' first ones (bpf/sched.h first_waits), and their sum.
  uint64_t first_waits = 0;
  uint64_t first_wait_ns = 0;
  uint64_t running_now = 0;  // CPUs running one of the stage's tasks at collect time
  // oncpu_ns by the group of the CPU it ran on (SplitOncpuByCpuGroup; else one group).
  std::vector<uint64_t> oncpu_ns_by_cpu_group;
};

class SchedTracker {
 public:
  SchedTracker(SchedProbe* probe, CgroupNamer* namer);

  // Splits each stage's on-CPU time by the group of the CPU it ran on (`group_of_cpu[cpu]`; a
  // CPU beyond it is in group 0), for a signal that groups CPUs: placement, by NUMA node. The
  // probe counts per CPU, so this costs no BPF. Only before the first Collect(): what was
  // folded unsplit cannot be split after.
  absl::Status SplitOncpuByCpuGroup(std::vector<uint32_t> group_of_cpu);

  // Reads the maps, folds them, drops the entries of cgroups that died, and counts who is on a
  // CPU now (a test run of a BPF program on every CPU, each an interrupt of that CPU).
  void Collect();
  // Whether so many cgroups took a slot since the last collection (kEarlyCollectSlots) that
  // waiting for the next one on the clock could leave a churn none: a dead cgroup's slot is
  // freed only by a collection, once its last counts are folded.
  bool SlotsFillingFast() const;

  std::map<StageId, SchedStageTotals> Totals() const;
  std::map<StagePair, uint64_t> Preemptions() const;
  uint64_t unknown_cgroups() const;
  // Updates the probe dropped because a map was full, as of the last collection.
  struct Overflows {
    uint64_t stats = 0, pairs = 0;
  };
  Overflows overflows() const;
  // Of the cgroups known at the last collection, how many it read and how many it named and
  // folded: those whose counts moved, or whose names may have. A collection where no name
  // changed reads only the slots that moved since the one before (SchedProbe::TakeMovedSlots).
  struct Folded {
    size_t known = 0, read = 0, folded = 0;
  };
  Folded last_folded() const;

 private:
  // One cgroup of the probe's stats array, from read to read.
  struct CgroupRead {
    uint64_t read = 0;         // the last read that found it
    uint32_t slot = 0;         // where it found it
    uint64_t events = 0;       // its switches and exits at the read before
    bool moved = true;         // whether they had moved at the read before
    bool named = false;        // the last naming found it alive in a stage
  };
  // One entry of the preemption matrix, from read to read.
  struct PairRead {
    uint64_t key = 0;  // what it is folded under in pairs_
    uint64_t count = 0;
    uint64_t read = 0;
    bool named = false;  // both cgroups alive in a stage at the last naming
  };

  void CollectCounters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakeNames() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Each cgroup's counts summed over its CPUs' copies, and its on-CPU time by CPU group, at
  // this collection (inline: a few groups cost no allocation a cgroup).
  struct CgroupSum {
    sched_cgroup_stats stats{};
    absl::InlinedVector<uint64_t, 4> oncpu_by_group;
  };
  using CgroupSums = absl::flat_hash_map<uint64_t, CgroupSum>;
  // Every slot's when `whole`, else only those that may have moved or must be folded again.
  CgroupSums ReadCgroups(bool whole) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<uint32_t> SlotsToRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FoldCgroups(const CgroupSums& sums, bool renamed, bool whole)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FoldPairs(bool renamed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetDead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NamedAlive(uint64_t id, const std::optional<StageId>& stage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SchedProbe* const probe_;
  CgroupNamer* const namer_;
  mutable absl::Mutex mu_;
  CollectionNaming naming_ ABSL_GUARDED_BY(mu_);
  // The namer's names at the last collection: one object until they change.
  std::shared_ptr<const std::vector<NamedCgroup>> names_ ABSL_GUARDED_BY(mu_);
  uint64_t reads_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, CgroupRead> cgroup_reads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> moved_before_ ABSL_GUARDED_BY(mu_);  // marked at the collection before
  std::set<uint64_t> forgotten_ ABSL_GUARDED_BY(mu_);  // their slots freed: retired at the next fold
  std::vector<uint32_t> group_of_cpu_ ABSL_GUARDED_BY(mu_);
  size_t cpu_groups_ ABSL_GUARDED_BY(mu_) = 1;
  // Made again, wider, by SplitOncpuByCpuGroup (StageCounters' width is fixed).
  std::optional<StageCounters> cgroups_ ABSL_GUARDED_BY(mu_);
  // Pairs are folded like stages, each under a key of its own (PairRead::key).
  StageCountersOf<StagePair> pairs_ ABSL_GUARDED_BY(mu_){1};
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, PairRead> pair_reads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> forgotten_pair_keys_ ABSL_GUARDED_BY(mu_);  // retired at the next fold
  uint64_t next_pair_key_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<StageId, uint64_t> running_ ABSL_GUARDED_BY(mu_);
  Overflows overflows_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> slots_after_collect_{0};  // the probe's slots in use then
  Folded last_folded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
