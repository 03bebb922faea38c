// The anomaly rules the engine runs; their names are the `rule` label and the config's keys.
#pragma once

#include <cstddef>

namespace stagewatch {

enum class AnomalyRule {
  kMemoryClimb,
  kLimitEta,
  kPressureSpike,
  kFaultStorm,
  kCpuStarvation,
  kOomKill,
  kSlowRun,
};
inline constexpr size_t kAnomalyRules = 7;
const char* AnomalyRuleName(AnomalyRule rule);  // "memory_climb", ...

}  // namespace stagewatch
