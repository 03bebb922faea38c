// A run's baseline: what its stage's recent clean runs with the same limits usually took. The
// median of each figure over them, so one odd run among them moves nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runs/run_record.h"

namespace stagewatch {

// Fewer clean runs than this with the same limits: no baseline (a median of two is one of them).
inline constexpr int kMinBaselineRuns = 3;

// The figures the slowdown split compares, of one run or, as medians, of a baseline. Figures
// summed over the run's tasks (run-queue wait, reclaim stalls, CPU time) are per task; the
// others are wall time. nullopt: not observed.
struct RunFigures {
  double wall_seconds = 0;
  std::optional<double> cpu_seconds;
  std::optional<double> queued_seconds;          // run-queue wait that was not throttling
  std::optional<double> throttled_wall_seconds;  // wall time its CPU limit held it back
  std::optional<double> reclaim_stall_seconds;
  std::optional<double> memory_pressure_seconds;  // PSI "some"
  std::optional<double> io_pressure_seconds;      // PSI "some"
  std::optional<double> memory_peak_bytes;
};

// An ended run's figures.
RunFigures FiguresOf(const RunRecord& run);

struct Baseline {
  std::vector<std::string> run_ids;  // newest first
  RunFigures median;                 // of each figure, over the runs that observed it
  double p90_wall_seconds = 0;
};

// The baseline of `runs` (a stage's clean runs with the same limits, newest first, at most as
// many as wanted): nullopt with fewer than kMinBaselineRuns ended runs.
std::optional<Baseline> BaselineOf(const std::vector<RunRecord>& runs);

}  // namespace stagewatch
