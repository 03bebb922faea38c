// The labels that name a stage on every per-stage metric (DESIGN.md §6).
#pragma once

#include "exporters/metric_builders.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

// {pipeline_stage}, plus {pipeline} when the stage has one, plus `extra`.
inline Labels StageLabels(const Stage& stage, Labels extra = {}) {
  Labels labels{{"pipeline_stage", stage.name}};
  if (!stage.pipeline.empty()) labels.emplace_back("pipeline", stage.pipeline);
  labels.insert(labels.end(), extra.begin(), extra.end());
  return labels;
}

}  // namespace stagewatch::exporters
