// Collector "oom": OOM kills per stage, and beside them the kernel's own per-cgroup counts,
// which it adapts from the sampler's snapshot (kOomPart) without reading a file.
#pragma once

#include "exporters/metrics/collector.h"
#include "sampler/memory_sampler.h"
#include "signals/oom/oom_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class OomCollector : public Collector {
 public:
  OomCollector(const OomTracker* tracker, StageResolver* stages, const MemorySampler* sampler)
      : tracker_(tracker), stages_(stages), sampler_(sampler) {}
  std::string_view name() const override { return "oom"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  const OomTracker* const tracker_;
  StageResolver* const stages_;
  const MemorySampler* const sampler_;
};

}  // namespace stagewatch::exporters
