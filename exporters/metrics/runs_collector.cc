#include "exporters/metrics/runs_collector.h"

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {

absl::Status RunsCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const RunsSnapshot snapshot = snapshot_();
  auto total = CounterFamily("stagewatch_runs_total",
                             "Runs of the stage that ended since the agent started, by verdict "
                             "(clean, degraded, interrupted, unobserved; docs/runs.md).");
  auto info = GaugeFamily("stagewatch_run_info",
                          "1 for each of the stage's newest ended runs (runs.info_per_stage), "
                          "labelled with its id and verdict.");
  for (const auto& [key, n] : snapshot.ended) {
    const auto& [stage, pipeline, verdict] = key;
    AddCounter(&total, StageLabels(stage, pipeline, {{"verdict", verdict}}),
               static_cast<double>(n));
  }
  for (const EndedRun& r : snapshot.recent) {
    AddGauge(&info, StageLabels(r.stage, r.pipeline, {{"run_id", r.id}, {"verdict", r.verdict}}),
             1);
  }
  out->push_back(std::move(total));
  out->push_back(std::move(info));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
