// The tasks of each stage by state, counted on the sampler's clock (the memory signal's
// collection), from the task_states iterator or /proc: a scrape adapts the last count, and
// the count is taken on the scrapes' period (a pass over every task: 17 ms at 10,000 cgroups).
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

  // Counts the threads of every named cgroup, summed per stage (a thread is listed by the
  // cgroup it sits in, not its ancestors: every cgroup is added up). The rest of the host
  // (`unattributed`) is not ours to list.
  void Collect();
  // Whether Collect() is due now, ahead of the next scrape (the sampler's thread asks).
  bool Due(absl::Time now) { return due_.Due(now); }
  // The last count, for a scrape at `now`.
  std::map<StageId, TaskStateCounts> Counts(absl::Time now) const;

 private:
  TaskStateSource source_;  // used by Collect() alone
  CgroupNamer* const namer_;
  const std::string key_root_;
  mutable ScrapeCadence due_;  // a scrape tells it when it read (thread-safe)
  mutable absl::Mutex mu_;
  std::map<StageId, TaskStateCounts> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
