// Slower than usual: is a running run past its baseline's usual wall time, or will its pipeline
// miss its deadline at the run's current pace? Pure: the run watcher feeds it the run's age and
// CPU time so far and its expectation (detectors/run_expectation.h), each tick.
//
// A run is slow once its age is past the baseline's p90 wall time and at least `min_ratio`
// times the median (with three baseline runs of nearly equal length the p90 alone is a hair
// above the median). A run of a pipeline with a deadline is late when the end projected at its
// pace is after the deadline: with the CPU time of the baseline known, the work left is that
// less the CPU time so far, done at the run's CPU rate so far; otherwise the run takes its
// usual wall time (or, past it, ends now at the earliest).
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "detectors/run_expectation.h"

namespace stagewatch {

struct RunPace {
  double age_seconds = 0;
  std::optional<double> cpu_seconds;  // the run's CPU time so far
};

struct PaceVerdict {
  bool slow = false;  // past its usual time
  bool late = false;  // its projected end is after its pipeline's deadline
  double ratio = 0;   // age over the usual (median) wall time
  absl::Time projected_end;
  bool active() const { return slow || late; }
};

// When the run is expected to end at its pace so far.
absl::Time ProjectedEnd(const RunExpectation& expected, const RunPace& pace);

// `deadline`: the run's pipeline's window end, when it has one.
PaceVerdict JudgePace(const SlowRunConfig& config, const RunExpectation& expected,
                      const RunPace& pace, std::optional<absl::Time> deadline);

}  // namespace stagewatch
