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
                          "labelled with its id, verdict and pipeline run.");
  auto duration = HistogramFamily("stagewatch_run_duration_seconds",
                                  "Wall time of the stage's runs that ended since the agent "
                                  "started.");
  auto lost = CounterFamily("stagewatch_run_lost_seconds_total",
                            "Wall time the stage's ended runs took beyond their baseline (their "
                            "stage's usual), by cause (docs/runs.md).");
  const std::vector<double> edges(kRunDurationEdges.begin(), kRunDurationEdges.end());
  for (const auto& [key, d] : snapshot.durations) {
    AddHistogram(&duration, StageLabels(key.first, key.second, {}), edges,
                 std::vector<uint64_t>(d.in_bucket.begin(), d.in_bucket.end()), d.above_last_edge,
                 d.sum_seconds);
  }
  for (const auto& [key, seconds] : snapshot.lost_seconds) {
    const auto& [stage, pipeline, cause] = key;
    AddCounter(&lost, StageLabels(stage, pipeline, {{"cause", cause}}), seconds);
  }
  for (const auto& [key, n] : snapshot.ended) {
    const auto& [stage, pipeline, verdict] = key;
    AddCounter(&total, StageLabels(stage, pipeline, {{"verdict", verdict}}),
               static_cast<double>(n));
  }
  for (const EndedRun& r : snapshot.recent) {
    Labels labels{{"run_id", r.id}, {"verdict", r.verdict}};
    if (!r.pipeline_run.empty()) labels.emplace_back("pipeline_run", r.pipeline_run);
    AddGauge(&info, StageLabels(r.stage, r.pipeline, std::move(labels)), 1);
  }
  out->push_back(std::move(total));
  out->push_back(std::move(info));
  out->push_back(std::move(duration));
  out->push_back(std::move(lost));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
