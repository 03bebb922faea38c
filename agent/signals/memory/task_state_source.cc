#include "signals/memory/task_state_source.h"

#include "log.h"

namespace stagewatch {

void TaskStateSource::BeginPass() {
  pass_.reset();
  if (!iterator_) return;
  absl::StatusOr<TaskStatesByCgroup> counted = iterator_->Count();
  if (counted.ok()) {
    pass_ = *std::move(counted);
    warned_ = false;
    return;
  }
  if (!warned_) {
    Log::Warn("task iterator failed; reading task states from /proc for now",
              {{"error", counted.status().ToString()}});
    warned_ = true;
  }
}

absl::StatusOr<TaskStateCounts> TaskStateSource::Read(uint64_t cgroup_id,
                                                      const std::string& cgroup_dir) {
  if (!pass_) return proc_.Read(cgroup_dir);
  auto it = pass_->find(cgroup_id);
  return it == pass_->end() ? TaskStateCounts{} : it->second;  // no thread in it
}

void TaskStateSource::EndPass() {
  if (!pass_) proc_.EndPass();
}

}  // namespace stagewatch
