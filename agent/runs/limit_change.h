// Before and after each change of a stage's limits: did the runs get slower, peak lower, and
// compute the same (their results)? "memory-max 2.00 GiB → 1.50 GiB: wall +4.0% (p 0.2 over
// 5+5 runs), peak -22.0%, accuracy 0.9547 → 0.9547".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "runs/run_record.h"

namespace stagewatch {

struct LimitPeriod;  // runs/advisor.h

// What a stretch of ended runs measured, for comparing it with the next stretch.
struct PeriodSamples {
  std::vector<double> wall_seconds;
  std::vector<double> peak_bytes;                      // runs with a kernel peak
  std::map<std::string, std::vector<double>> results;  // result name → the runs' values
  void Add(const RunRecord& ended_run);
};

// A comparison needs this many runs on each side.
inline constexpr int kLimitChangeMinRuns = 2;

struct MedianChange {
  double before = 0, after = 0;
  std::optional<double> percent;  // none when `before` is 0
};

struct LimitChange {
  RunLimits before, after;
  absl::Time at;  // the first run under the new limits
  int runs_before = 0, runs_after = 0;
  bool enough_runs = false;  // at least kLimitChangeMinRuns on each side
  // Set with enough_runs: wall time, with a two-sided Mann-Whitney U test of the walls.
  std::optional<MedianChange> wall;
  double wall_p = 1;
  bool wall_p_exact = false;
  // Set when each side has kLimitChangeMinRuns runs with a peak.
  std::optional<MedianChange> peak;
  int peaks_before = 0, peaks_after = 0;
  std::map<std::string, MedianChange> results;  // names that runs on both sides recorded
};

// One per pair of consecutive periods (oldest first) whose limits differ.
std::vector<LimitChange> CompareLimitChanges(const std::vector<LimitPeriod>& periods);

// "memory-max 2.00 GiB → 1.50 GiB: wall +4.0% (p 0.2 over 5+5 runs), …", no newline.
std::string LimitChangeLine(const LimitChange& change);
nlohmann::json LimitChangeToJson(const LimitChange& change);

}  // namespace stagewatch
