// The `pipelines:` section: each pipeline's nights (when a night starts, local time) and its
// window end. Runs of a configured pipeline that no launcher grouped join the night they
// start in; `stagewatch pipelines show` and /pipelines/<id> tell whether a night met its end.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace stagewatch {

struct PipelineConfig {
  // After local midnight: a night runs from this time of day to the same time the next day.
  absl::Duration night_starts = absl::Hours(12);
  // After local midnight: the night should be over by the first such time after it started.
  std::optional<absl::Duration> deadline;
  int line = 0;  // where it was defined, for messages

  bool operator==(const PipelineConfig& o) const {
    return night_starts == o.night_starts && deadline == o.deadline;
  }
};

using PipelinesConfig = std::map<std::string, PipelineConfig>;  // by pipeline name

}  // namespace stagewatch
