// Collector "anomalies": the detectors' state per stage, and the memory limit ETA.
#pragma once

#include "anomaly/anomaly_engine.h"
#include "exporters/metrics/collector.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

class AnomalyCollector : public Collector {
 public:
  AnomalyCollector(AnomalyEngine* engine, StageResolver* stages)
      : engine_(engine), stages_(stages) {}
  std::string_view name() const override { return "anomalies"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  AnomalyEngine* const engine_;
  StageResolver* const stages_;
};

}  // namespace stagewatch::exporters
