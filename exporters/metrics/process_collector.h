// The agent's own process: CPU, resident memory, open files, start time, under the standard
// process_* names every Prometheus client library uses, so existing dashboards recognise them.
#pragma once

#include "exporters/metrics/collector.h"

namespace stagewatch::exporters {

class ProcessCollector : public Collector {
 public:
  std::string_view name() const override { return "process"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;
};

}  // namespace stagewatch::exporters
