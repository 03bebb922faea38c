// What a run's stage usually does, from its baseline (its stage's recent clean runs with the
// same limits, runs/baseline.h): its memory at each age and its wall time. Worked out once, when
// the run starts (runs/run_expectation_of.h), and handed to the detectors, which judge the run
// against it from its first sample instead of learning the stage for a warm-up first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace stagewatch {

struct AgePoint {
  double age_seconds = 0;
  double bytes = 0;
};

struct RunExpectation {
  std::string run_id;
  std::string stage;
  absl::Time start;
  int baseline_runs = 0;
  // The median over the baseline runs of their memory at each age, ascending in age, up to the
  // age the longest of them reached.
  std::vector<AgePoint> usual_memory;
  double median_wall_seconds = 0;
  double p90_wall_seconds = 0;
  std::optional<double> median_cpu_seconds;
};

// The usual memory at `age_seconds` (linear between the curve's points); none before its first
// point or after its last (no baseline run was that old).
std::optional<double> UsualMemoryAt(const std::vector<AgePoint>& curve, double age_seconds);

}  // namespace stagewatch
