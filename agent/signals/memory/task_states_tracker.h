// The tasks of each stage by state, counted on the sampler's clock (the memory signal's
// collection), from the task_states iterator or /proc: a scrape adapts the last count, and
// the count is taken on the scrapes' period (a pass over every task: 17 ms at 10,000 cgroups).
// A task changes state only by running (to sleep, stop or exit) or by being woken, which has
// it run next: while no stage's task ran since the last count and the cgroups are the same,
// the count is too, and the pass is skipped. What it would miss, a sleeping task moved into
// or out of a stage by another process, a pass at least every kMaxSkippedPasses + 1 finds.
#pragma once

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cgroup/cgroup_namer.h"
#include "sampler/collect_cadence.h"
#include "signals/memory/task_state_source.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

class TaskStatesTracker {
 public:
  // `iterator` null: /proc only. `key_root`: where the keyed hierarchy is mounted.
  // `every`: at most how often Collect() is due.
  TaskStatesTracker(const TaskStatesProbe* iterator, CgroupNamer* namer, std::string key_root,
                    absl::Duration every)
      : source_(iterator), namer_(namer), key_root_(std::move(key_root)), due_(every) {}

  static constexpr int kMaxSkippedPasses = 3;

  // Counts the threads of every named cgroup, summed per stage (a thread is listed by the
  // cgroup it sits in, not its ancestors: every cgroup is added up). The rest of the host
  // (`unattributed`) is not ours to list. `samples_a_stage_ran`: the latest snapshot's
  // (Snapshot::samples_a_stage_ran), to skip the pass while it and the cgroups are as at the
  // last count.
  void Collect(uint64_t samples_a_stage_ran);
  uint64_t passes() const { return passes_; }
  // Whether Collect() is due now, ahead of the next scrape (the sampler's thread asks).
  bool Due(absl::Time now) { return due_.Due(now); }
  // The last count, for a scrape at `now`.
  std::map<StageId, TaskStateCounts> Counts(absl::Time now) const;

 private:
  TaskStateSource source_;  // used by Collect() alone
  CgroupNamer* const namer_;
  const std::string key_root_;
  mutable ScrapeCadence due_;  // a scrape tells it when it read (thread-safe)
  // As of the last pass (used by Collect() alone): the names it counted, held so that a new
  // list cannot take their address, and the snapshots' count of samples a stage ran in.
  std::shared_ptr<const std::vector<NamedCgroup>> counted_live_;
  uint64_t counted_ran_ = 0;
  int skipped_ = 0;  // passes skipped since
  uint64_t passes_ = 0;
  mutable absl::Mutex mu_;
  std::map<StageId, TaskStateCounts> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
