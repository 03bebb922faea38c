// Collector "runs": ended runs by verdict, and the newest few runs of each stage with theirs.
#pragma once

#include <functional>

#include "exporters/metrics/collector.h"
#include "runs/run_watcher.h"

namespace stagewatch::exporters {

class RunsCollector : public Collector {
 public:
  explicit RunsCollector(std::function<RunsSnapshot()> snapshot)
      : snapshot_(std::move(snapshot)) {}
  std::string_view name() const override { return "runs"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  std::function<RunsSnapshot()> snapshot_;
};

}  // namespace stagewatch::exporters
