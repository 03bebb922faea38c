#include "signals/memory/memory_tracker.h"
#include "signals/lifecycle/lifecycle_probe.h"
#include "signals/memory/memory_probe.h"
#include "signals/oom/oom_probe.h"
#include "signals/sched/sched_probe.h"
#include "signals/memory/task_states_probe.h"
#include "runs/run_watcher.h"
#include "signals/sched/sched_tracker.h"
#include "signals/signal.h"
#include "signals/snapshot_source.h"

namespace stagewatch {

RunningSignals::RunningSignals() = default;
RunningSignals::~RunningSignals() { Stop(); }

void RunningSignals::Stop() {
  run_watcher.reset();
  oom_probe.reset();  // detaches the BPF programs
  sched.reset();
  sched_probe.reset();
  memory.reset();
  memory_probe.reset();
  task_states_probe.reset();
  cgroup_probe.reset();
}

}  // namespace stagewatch
