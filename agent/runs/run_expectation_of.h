// A running run's expectation (detectors/run_expectation.h) from its baseline in the ledger:
// looked up once, when the agent records the run, for the detectors that judge it against its
// stage's usual runs (the early limit-ETA page, slower than usual).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "detectors/run_expectation.h"
#include "runs/baseline.h"
#include "runs/ledger.h"
#include "runs/run_record.h"

namespace stagewatch {

// One baseline run's memory series: its start and its points, oldest first.
struct RunMemorySeries {
  absl::Time start;
  std::vector<RunSample> samples;
};

// The median over `runs` of their memory at each age, at most `max_points` ages evenly spaced up
// to the oldest age any of them reached; at each age, over the runs whose points cover it
// (linear between a run's points). Runs without memory points are left out.
std::vector<AgePoint> UsualMemoryByAge(const std::vector<RunMemorySeries>& runs,
                                       size_t max_points = 256);

// `run`'s expectation from `baseline`, the baseline of `candidates` (Ledger::CleanRunsBefore):
// their memory series are read from `ledger`.
absl::StatusOr<RunExpectation> ExpectationOf(Ledger& ledger, const RunStart& run,
                                             const std::vector<RunRecord>& candidates,
                                             const Baseline& baseline);

}  // namespace stagewatch
