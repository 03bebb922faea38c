// The `anomalies:` section of the configuration: what each detector looks for. Plain settings
// only, so the configuration needs nothing from the detectors; each detector in agent/detectors/
// explains what its figures mean.
#pragma once

#include <cstddef>
#include <string>

#include "absl/time/time.h"

namespace stagewatch {

struct MemoryClimbConfig {
  bool enabled = true;
  absl::Duration window = absl::Seconds(30);  // growth is measured over this span
  absl::Duration baseline_half_life = absl::Minutes(10);
  double k = 6;  // fires above baseline mean + k * stddev of the rate...
  double min_growth_bytes = 256.0 * 1024 * 1024;  // ...and when the window grew at least this
  absl::Duration warmup = absl::Minutes(2);       // learning only, from when the stage settled
  // Clears once the rate has stayed below mean + k/2 * stddev (or the growth below half the
  // floor) this long: hysteresis in level and in time, so a bumpy climb pages once.
  absl::Duration clear_hold = absl::Seconds(30);

  bool operator==(const MemoryClimbConfig&) const = default;
};

struct LimitEtaConfig {
  bool enabled = true;
  absl::Duration window = absl::Seconds(120);    // the fit's sliding window
  size_t min_points = 10;                        // no fit with fewer points...
  absl::Duration min_span = absl::Seconds(30);   // ...or over a shorter span
  absl::Duration threshold = absl::Minutes(10);  // fires when the limit is nearer than this...
  double min_usage_fraction = 0.5;       // ...and fitted usage is at least this share of the limit
  double max_release_fraction = 0.05;    // a drop of more than this share of the limit: no trend
  double min_recent_growth_ratio = 0.5;  // newer half's slope / older half's, at least
  // From the first sample, no alarm (the ETA is still given): a fit over the first half
  // minute is noisy, and a stage's first allocation ramp (a training loop's first cycle, a
  // start-up) looks like a leak until the window has seen it level off or drop.
  absl::Duration warmup = absl::Minutes(2);
  // Clears when the ETA has been above 2 x threshold, or undefined, this long: noise in the
  // trend checks must not make a real leak's alert flap. A removed limit clears at once.
  absl::Duration clear_hold = absl::Seconds(30);

  bool operator==(const LimitEtaConfig&) const = default;
};

struct PressureSpikeConfig {
  bool enabled = true;
  absl::Duration window = absl::Seconds(30);   // the stall rate is measured over this span
  double threshold = 0.10;                     // share of wall time fully stalled
  absl::Duration sustain = absl::Seconds(15);  // above the threshold this long to fire
  double clear_ratio = 0.5;                    // clears below threshold * clear_ratio

  bool operator==(const PressureSpikeConfig&) const = default;
};

enum class RateInput {
  kCounter,  // cumulative: the signal is its rate over the window
  kGauge,    // instantaneous: the signal is its median over the window
};

enum class RateUnit {
  kPerSecond,  // shown as "1520/s"
  kSeconds,    // shown as "120 ms"
};

struct RateBaselineConfig {
  bool enabled = true;
  RateInput input = RateInput::kCounter;
  std::string what = "rate";  // names the signal in the summary
  RateUnit unit = RateUnit::kPerSecond;
  absl::Duration window = absl::Seconds(30);
  absl::Duration baseline_half_life = absl::Minutes(10);
  double k = 6;          // fires above baseline mean + k * stddev...
  double min_level = 0;  // ...and above this floor (signal units)
  // Counters: the share of the window's time, busiest intervals first, left out of the rate.
  // Only whole sampling intervals are left out: with coarse sampling nothing is.
  double trim_fraction = 0.1;
  absl::Duration warmup = absl::Minutes(2);  // learning only, from when the stage settled
  // Clears once the signal has stayed below max(min_level / 2, mean + k/2 * stddev) this long.
  absl::Duration clear_hold = absl::Seconds(30);

  bool operator==(const RateBaselineConfig&) const = default;
};

// Major page faults: counter, fires above max(200/s, mean + 6 stddev).
inline RateBaselineConfig FaultStormConfig() {
  RateBaselineConfig config;
  config.input = RateInput::kCounter;
  config.what = "major page faults";
  config.unit = RateUnit::kPerSecond;
  config.min_level = 200;
  return config;
}

// p99 run-queue latency in seconds: gauge, fires above max(50 ms, mean + 6 stddev).
inline RateBaselineConfig CpuStarvationConfig() {
  RateBaselineConfig config;
  config.input = RateInput::kGauge;
  config.what = "p99 run-queue latency";
  config.unit = RateUnit::kSeconds;
  config.min_level = 0.05;
  return config;
}

struct AnomalyConfig {
  MemoryClimbConfig memory_climb;
  LimitEtaConfig limit_eta;
  PressureSpikeConfig pressure_spike;
  RateBaselineConfig fault_storm = FaultStormConfig();
  RateBaselineConfig cpu_starvation = CpuStarvationConfig();
  bool oom_kill = true;
  absl::Duration oom_kill_hold = absl::Minutes(5);  // how long an OOM kill stays active
  absl::Duration runq_window = absl::Seconds(30);   // p99 run-queue latency is taken over this

  bool operator==(const AnomalyConfig&) const = default;
};

}  // namespace stagewatch
