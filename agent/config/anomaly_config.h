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
  // A run with a baseline (its stage's recent clean runs) is judged from its first fit instead,
  // once its fitted usage is at least this many times its stage's usual at the same age.
  double above_usual_ratio = 1.2;
  // Without a baseline, a domain whose ETA is shorter than what is left of `warmup` (it would
  // be killed before the warm-up ends) is judged from this age on, once its fitted usage is at
  // least `short_warmup_usage_fraction` of its limit: a start-up ramp or a loop's first cycle
  // that levels off below that share stays quiet.
  absl::Duration short_warmup = absl::Seconds(30);
  double short_warmup_usage_fraction = 0.8;
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

// Slower than usual: a running run with a baseline past its p90 wall time, or a pipeline's run
// that will not end before the pipeline's deadline at its pace (detectors/run_pace.h).
struct SlowRunConfig {
  bool enabled = true;
  double min_ratio = 1.3;  // and at least this many times its usual (median) wall time

  bool operator==(const SlowRunConfig&) const = default;
};

struct AnomalyConfig {
  MemoryClimbConfig memory_climb;
  LimitEtaConfig limit_eta;
  PressureSpikeConfig pressure_spike;
  RateBaselineConfig fault_storm = FaultStormConfig();
  RateBaselineConfig cpu_starvation = CpuStarvationConfig();
  SlowRunConfig slow_run;
  bool oom_kill = true;
  absl::Duration oom_kill_hold = absl::Minutes(5);  // how long an OOM kill stays active
  absl::Duration runq_window = absl::Seconds(30);   // p99 run-queue latency is taken over this

  bool operator==(const AnomalyConfig&) const = default;
};

}  // namespace stagewatch
