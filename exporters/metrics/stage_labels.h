// The labels that name a stage on every per-stage metric (docs/metrics.md, "Labels").
#pragma once

#include "exporters/metrics/metric_builders.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

// {pipeline_stage}, plus {pipeline} when the stage has one, plus `extra`. Collectors find a
// StageId's Stage in a StageDirectory and label it here, once per series.
inline Labels StageLabels(const std::string& name, const std::string& pipeline,
                          Labels extra = {}) {
  Labels labels{{"pipeline_stage", name}};
  if (!pipeline.empty()) labels.emplace_back("pipeline", pipeline);
  labels.insert(labels.end(), extra.begin(), extra.end());
  return labels;
}
inline Labels StageLabels(const Stage& stage, Labels extra = {}) {
  return StageLabels(stage.name, stage.pipeline, std::move(extra));
}

}  // namespace stagewatch::exporters
