// Collector "memory": page faults from the sampler's memory.stat where a stage has the memory
// controller, else as the memory tracker last folded the probe's map; reclaim stalls as the
// tracker folded them; usage, limits, events, time near the limit, peaks and pressure from the
// sampler's snapshot; task states as last counted. It reads nothing itself: all are made on
// the sampler's clock.
#pragma once

#include "cgroup/cgroup_namer.h"
#include "exporters/metrics/collector.h"
#include "sampler/memory_sampler.h"
#include "signals/memory/memory_tracker.h"
#include "signals/memory/task_states_tracker.h"
#include "signals/sched/sched_tracker.h"

namespace stagewatch::exporters {

struct MemoryCollectorSources {
  const MemoryTracker* tracker = nullptr;  // null when the probe could not start
  MemorySampler* sampler = nullptr;
  const SchedTracker* sched = nullptr;  // tasks on a CPU; null without the sched probe
  CgroupNamer* namer = nullptr;
  const TaskStatesTracker* task_states = nullptr;  // null: no stagewatch_tasks
};

class MemoryCollector : public Collector {
 public:
  explicit MemoryCollector(MemoryCollectorSources sources);
  std::string_view name() const override { return "memory"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectFaults(const std::vector<Stage>& stages, std::vector<prometheus::MetricFamily>* out);
  void CollectKernel(std::vector<prometheus::MetricFamily>* out);
  absl::Status CollectCgroupfs(const std::vector<Stage>& stages,
                               std::vector<prometheus::MetricFamily>* out);
  void CollectTasks(const std::vector<Stage>& stages, std::vector<prometheus::MetricFamily>* out);

  MemoryCollectorSources s_;
};

}  // namespace stagewatch::exporters
