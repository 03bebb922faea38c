// What the anomaly detectors look for; part of the agent's configuration (`anomalies:`).
#pragma once

#include <cstddef>

#include "absl/time/time.h"
#include "detectors/limit_eta.h"
#include "detectors/memory_climb.h"
#include "detectors/pressure_spike.h"
#include "detectors/rate_baseline.h"

namespace stagewatch {

enum class AnomalyRule { kMemoryClimb, kLimitEta, kPressureSpike, kFaultStorm, kCpuStarvation, kOomKill };
inline constexpr size_t kAnomalyRules = 6;
const char* AnomalyRuleName(AnomalyRule rule);  // "memory_climb", ...

struct AnomalyConfig {
  MemoryClimbConfig memory_climb;
  LimitEtaConfig limit_eta;
  PressureSpikeConfig pressure_spike;
  RateBaselineConfig fault_storm = FaultStormConfig();
  RateBaselineConfig cpu_starvation = CpuStarvationConfig();
  bool oom_kill = true;
  absl::Duration oom_kill_hold = absl::Minutes(5);  // how long an OOM kill stays active
  absl::Duration runq_window = absl::Seconds(30);   // p99 run-queue latency is taken over this
};

}  // namespace stagewatch
