// Collector "oom": OOM kills per stage, and the kernel's own per-cgroup counts beside them.
#pragma once

#include "exporters/collector.h"
#include "oom/oom_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class OomCollector : public Collector {
 public:
  OomCollector(OomTracker* tracker, StageResolver* stages) : tracker_(tracker), stages_(stages) {}
  std::string_view name() const override { return "oom"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  OomTracker* const tracker_;
  StageResolver* const stages_;
};

}  // namespace stagewatch::exporters
