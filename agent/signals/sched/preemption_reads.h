// The preemptors of runs that end in a storm, without reading the pairs map once per run.
//
// A run's row of preemptions (preempted = one of its cgroups) stops changing once its cgroups
// hold no task: a pair is counted when a runnable task of the preempted cgroup is switched
// out, and an exiting task switches out dead. At an rmdir the cgroup is empty, so a read of
// the map taken after the rmdir is exact for it: one read serves every rmdir the kernel made
// before it. 10,000 cgroups removed at once beside 7,000 pairs read the map a few times, where
// a read for each took the event thread minutes.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "signals/sched/sched_probe.h"

namespace stagewatch {

// Thread-safe: the lifecycle events' thread and the run watcher's both ask.
class PreemptionReads {
 public:
  explicit PreemptionReads(const SchedProbe* sched) : sched_(sched) {}

  // Preempting cgroup → times it preempted one of `ids`, whose cgroups held no task from
  // `settled_ns` on (CLOCK_MONOTONIC, as the BPF events' times): from the last read of the map
  // if it was taken after that, else from a new one (always for UINT64_MAX: not known).
  std::map<uint64_t, uint64_t> Of(const std::set<uint64_t>& ids, uint64_t settled_ns);

  uint64_t reads() const;  // reads of the whole map so far

 private:
  const SchedProbe* const sched_;
  mutable std::mutex mu_;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> last_;
  uint64_t taken_ns_ = 0;  // when last_ was read: before its read began
  bool taken_ = false;
  uint64_t reads_ = 0;
};

}  // namespace stagewatch
