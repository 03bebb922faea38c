// Loads bpf/task_states.bpf.c, a BPF task iterator: the scheduler state of every user thread,
// by cgroup, in one pass over the kernel's task list, run at each scrape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "bpf/task_states.h"
#include "cgroup/task_states.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"

struct task_states_bpf;
struct bpf_link;

namespace stagewatch {

void DestroyTaskStatesSkeleton(task_states_bpf* skel);
void DestroyTaskStatesLink(bpf_link* link);

// The letter /proc/<tid>/stat prints for a thread whose task->__state is `state` and whose
// task->exit_state is `exit_state` (the kernel's __task_state_index(), include/linux/sched.h).
char StateLetter(uint32_t state, uint32_t exit_state);

struct TaskStatesProbeOptions {
  bool enabled = true;  // memory.task_iterator; false reports the probe as turned off
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  KernelFeatures features;
};

// Threads by state, per cgroup id of the keyed hierarchy (only the cgroup a thread sits in,
// not its ancestors).
using TaskStatesByCgroup = absl::flat_hash_map<uint64_t, TaskStateCounts>;

class TaskStatesProbe {
 public:
  // Opens, loads and attaches the iterator; an error (no task iterators here) means the caller
  // reads /proc instead.
  static absl::StatusOr<std::unique_ptr<TaskStatesProbe>> Start(
      const TaskStatesProbeOptions& options);
  TaskStatesProbe(const TaskStatesProbe&) = delete;
  TaskStatesProbe& operator=(const TaskStatesProbe&) = delete;
  ~TaskStatesProbe();

  // One pass of the iterator over every thread of the host. Thread-safe.
  absl::StatusOr<TaskStatesByCgroup> Count() const;

  std::vector<ProbeStatus> statuses() const { return {status_}; }
  std::vector<ProgramStats> program_stats() const;
  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  TaskStatesProbe() = default;

  // Members are destroyed in reverse: the link goes before the skeleton.
  SkeletonPtr<task_states_bpf, DestroyTaskStatesSkeleton> skel_;
  SkeletonPtr<bpf_link, DestroyTaskStatesLink> link_;
  ProbeStatus status_;
};

}  // namespace stagewatch
