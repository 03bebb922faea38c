// The tasks of each stage by state, counted on the sampler's clock (the memory signal's
// collection), from the task_states iterator or /proc: a scrape adapts the last count.
#pragma once

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cgroup/cgroup_namer.h"
#include "signals/memory/task_state_source.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

class TaskStatesTracker {
 public:
  // `iterator` null: /proc only. `key_root`: where the keyed hierarchy is mounted.
  TaskStatesTracker(const TaskStatesProbe* iterator, CgroupNamer* namer, std::string key_root)
      : source_(iterator), namer_(namer), key_root_(std::move(key_root)) {}

  // Counts the threads of every named cgroup, summed per stage (a thread is listed by the
  // cgroup it sits in, not its ancestors: every cgroup is added up). The rest of the host
  // (`unattributed`) is not ours to list.
  void Collect();
  std::map<StageId, TaskStateCounts> Counts() const;

 private:
  TaskStateSource source_;  // used by Collect() alone
  CgroupNamer* const namer_;
  const std::string key_root_;
  mutable absl::Mutex mu_;
  std::map<StageId, TaskStateCounts> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
