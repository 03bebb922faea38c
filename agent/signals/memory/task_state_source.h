// Where stagewatch_tasks comes from at each collection: one pass of the kernel's task iterator
// (the task_states probe) where it runs, else each cgroup's task list and /proc/<tid>/stat.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cgroup/task_states.h"
#include "signals/memory/task_states_probe.h"

namespace stagewatch {

// Not thread-safe: one source per collector.
class TaskStateSource {
 public:
  // `iterator` null: /proc only.
  explicit TaskStateSource(const TaskStatesProbe* iterator) : iterator_(iterator) {}

  // Starts a pass over the cgroups: runs the iterator once. Where that fails, this pass reads
  // /proc, and a warning says why.
  void BeginPass();
  // The threads directly in the cgroup `cgroup_id`, whose directory is `cgroup_dir`.
  absl::StatusOr<TaskStateCounts> Read(uint64_t cgroup_id, const std::string& cgroup_dir);
  void EndPass();

  // Whether the last BeginPass() got its counts from the kernel's iterator.
  bool from_iterator() const { return pass_.has_value(); }

 private:
  const TaskStatesProbe* const iterator_;
  std::optional<TaskStatesByCgroup> pass_;
  bool warned_ = false;
  TaskStateReader proc_;
};

}  // namespace stagewatch
