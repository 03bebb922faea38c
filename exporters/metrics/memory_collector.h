// Collector "memory": page faults and reclaim stalls from the memory probe; usage, limits,
// events, time near the limit, peaks and pressure from the sampler's snapshot; and task
// states per stage.
#pragma once

#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "cgroup/task_state_source.h"
#include "exporters/metrics/collector.h"
#include "sampler/memory_sampler.h"
#include "signals/memory/memory_tracker.h"
#include "signals/sched/sched_tracker.h"

namespace stagewatch::exporters {

struct MemoryCollectorSources {
  MemoryTracker* tracker = nullptr;  // null when the probe could not start
  MemoryProbe* probe = nullptr;
  MemorySampler* sampler = nullptr;
  SchedTracker* sched = nullptr;     // tasks on a CPU right now; null without the sched probe
  CgroupNamer* namer = nullptr;
  TaskStatesProbe* task_states = nullptr;  // null: task states are read from /proc
  CgroupLayout layout;
};

class MemoryCollector : public Collector {
 public:
  explicit MemoryCollector(MemoryCollectorSources sources);
  std::string_view name() const override { return "memory"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectKernel(std::vector<prometheus::MetricFamily>* out);
  absl::Status CollectCgroupfs(const std::vector<Stage>& stages,
                               std::vector<prometheus::MetricFamily>* out);
  void CollectTasks(const std::vector<Stage>& stages, std::vector<prometheus::MetricFamily>* out);

  MemoryCollectorSources s_;
  TaskStateSource task_states_;
};

}  // namespace stagewatch::exporters
