#include "signals/memory/task_states_tracker.h"

namespace stagewatch {

void TaskStatesTracker::Collect(uint64_t samples_a_stage_ran) {
  std::shared_ptr<const std::vector<NamedCgroup>> live = namer_->Live();
  if (live == counted_live_ && samples_a_stage_ran == counted_ran_ &&
      skipped_ < kMaxSkippedPasses) {
    skipped_++;
    return;
  }
  skipped_ = 0;
  counted_ran_ = samples_a_stage_ran;
  counted_live_ = live;
  passes_++;
  std::map<StageId, TaskStateCounts> counts;
  source_.BeginPass();
  for (const NamedCgroup& c : *live) {
    if (c.stage.id == kUnattributedStageId) continue;
    absl::StatusOr<TaskStateCounts> t = source_.Read(c.id, key_root_ + c.path);
    if (!t.ok()) continue;
    TaskStateCounts& sum = counts[c.stage.id];
    sum.runnable += t->runnable;
    sum.sleeping += t->sleeping;
    sum.uninterruptible += t->uninterruptible;
    sum.stopped += t->stopped;
    sum.zombie += t->zombie;
  }
  source_.EndPass();
  absl::MutexLock lock(&mu_);
  counts_ = std::move(counts);
}

std::map<StageId, TaskStateCounts> TaskStatesTracker::Counts(absl::Time now) const {
  due_.Scraped(now);
  absl::MutexLock lock(&mu_);
  return counts_;
}

}  // namespace stagewatch
