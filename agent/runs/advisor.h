// The limit advisor: memory and CPU limits for a stage from the ledger's recent runs of it,
// with the evidence behind each figure. The formula is in docs/runs.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "config/runs_config.h"
#include "runs/limit_change.h"
#include "runs/percentile.h"
#include "runs/run_record.h"

namespace stagewatch {

// A stretch of consecutive runs under the same limits.
struct LimitPeriod {
  RunLimits limits;  // as started; memory-max from the kernel's limit when none was asked for
  int runs = 0;
  absl::Time first_start, last_start;
  double median_wall_seconds = 0;
  std::map<std::string, int> verdicts;  // verdict name → runs
  PeriodSamples samples;
};

struct Advice {
  std::string stage;
  bool enough_runs = false;
  std::string not_enough;  // why, when !enough_runs

  // Evidence.
  int runs_counted = 0;  // finished runs looked at
  int runs_with_peak = 0;
  std::map<std::string, int> verdicts;
  uint64_t largest_peak_bytes = 0;
  uint64_t percentile_peak_bytes = 0;
  double percentile = 0;
  std::optional<uint64_t> oom_limit_bytes;  // the largest limit a run was OOM-killed at
  std::optional<double> cpu_percentile_cores;
  std::optional<double> throttled_at_cores;  // the largest CPU limit a run was throttled at

  // Recommendations.
  uint64_t memory_max_bytes = 0;
  uint64_t memory_high_bytes = 0;
  std::optional<double> cpu_max_cores;  // none without CPU samples
  std::vector<std::string> why;         // one line per figure: how it came about

  std::vector<LimitPeriod> periods;  // oldest first; more than one when the limits changed
  std::vector<LimitChange> limit_changes;  // the runs before and after each change of limits
};

// `runs`: the stage's runs, any order; open runs are skipped.
Advice AdviseLimits(const std::string& stage, std::vector<RunRecord> runs,
                    const RunsConfig& config);

}  // namespace stagewatch
