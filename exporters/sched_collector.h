// Collector "sched": CPU contention per stage, from the sched probe and from cgroupfs.
#pragma once

#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "exporters/collector.h"
#include "sched/sched_tracker.h"
#include "stages/stage_counters.h"

namespace stagewatch::exporters {

class SchedCollector : public Collector {
 public:
  SchedCollector(SchedTracker* tracker, SchedProbe* probe, CgroupNamer* namer,
                 CgroupLayout layout);
  std::string_view name() const override { return "sched"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  void CollectKernel(std::vector<prometheus::MetricFamily>* out);
  absl::Status CollectCgroupfs(const std::vector<Stage>& stages,
                               std::vector<prometheus::MetricFamily>* out);

  SchedTracker* const tracker_;
  SchedProbe* const probe_;
  CgroupNamer* const namer_;
  const CgroupLayout layout_;
  StageCounters cgroupfs_;  // usage, periods, throttled periods, throttled ns, PSI some, full
};

}  // namespace stagewatch::exporters
