#include "exporters/metrics/anomaly_collector.h"

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {

absl::Status AnomalyCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const auto snapshot = engine_->Snapshot();
  auto active = GaugeFamily("stagewatch_anomaly_active",
                            "Whether the anomaly detector `rule` is firing for the stage (1) or not.");
  auto fired = CounterFamily("stagewatch_anomalies_total",
                             "Times the detector `rule` started firing for the stage; every OOM "
                             "kill counts for rule=\"oom_kill\".");
  auto eta = GaugeFamily("stagewatch_memory_limit_eta_seconds",
                         "Seconds until the stage's memory reaches its limit at the current "
                         "trend; absent without a limit or a growing trend.");
  const StageAnomalies none;
  for (const Stage& stage : stages_->KnownStages()) {
    auto it = snapshot.find(stage.id);
    const StageAnomalies& a = it == snapshot.end() ? none : it->second;
    for (size_t i = 0; i < kAnomalyRules; i++) {
      const Labels labels = StageLabels(stage, {{"rule", AnomalyRuleName(AnomalyRule(i))}});
      AddGauge(&active, labels, a.active[i] ? 1 : 0);
      AddCounter(&fired, labels, a.fired[i]);
    }
    if (a.limit_eta_seconds) AddGauge(&eta, StageLabels(stage), *a.limit_eta_seconds);
  }
  for (auto* f : {&active, &fired, &eta}) out->push_back(std::move(*f));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
