// Two runs side by side (`stagewatch runs compare A B`): every figure and every result, and the
// difference in wall time split by cause as a run's excess over its baseline is, with A as B's
// baseline.
#pragma once

#include <string>

#include "config/runs_config.h"
#include "nlohmann/json.hpp"
#include "runs/run_record.h"
#include "runs/slowdown.h"

namespace stagewatch {

// B's wall time against A's, split by cause; nullopt unless both ended.
std::optional<Slowdown> SlowdownBetween(const RunRecord& a, const RunRecord& b);

std::string RunComparisonText(const RunRecord& a, const RunRecord& b, const RunsConfig& config);
nlohmann::json RunComparisonJson(const RunRecord& a, const RunRecord& b, const RunsConfig& config);

}  // namespace stagewatch
