// What the agent exports about ended runs, per stage: how many by verdict, how long they took
// (a histogram of wall time) and the time they lost against their baseline, by cause. Bounded
// series that sum across nodes, so a fleet's Prometheus answers "which stage loses the most
// time to contention?".
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "runs/run_record.h"
#include "runs/slowdown.h"

namespace stagewatch {

// Upper edges of stagewatch_run_duration_seconds' buckets: from a second to a day.
inline constexpr std::array<double, 15> kRunDurationEdges = {
    1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400};

struct RunDurations {
  std::array<uint64_t, kRunDurationEdges.size()> in_bucket{};  // not cumulative
  uint64_t above_last_edge = 0;
  double sum_seconds = 0;
};

struct EndedRun {
  std::string id, stage, pipeline, pipeline_run, verdict;
  absl::Time end;
};

struct RunsSnapshot {
  using StageKey = std::pair<std::string, std::string>;  // stage, pipeline
  // (stage, pipeline, verdict) → ended runs; every stage a run was seen of has all four final
  // verdicts, zero included, so that increase() sees the first one.
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> ended;
  std::map<StageKey, RunDurations> durations;
  // (stage, pipeline, cause) → seconds lost by runs with a baseline; every cause of every seen
  // stage, zero included. kUnexplained counts only where it is positive (a counter never falls).
  std::map<std::tuple<std::string, std::string, std::string>, double> lost_seconds;
  std::vector<EndedRun> recent;  // each stage's newest runs.info_per_stage, newest first
};

// Makes the stage's series exist, at zero.
void SeeStage(RunsSnapshot& totals, const std::string& stage, const std::string& pipeline);
// Drops the stage's series (every pipeline's): its discovery was forgotten.
void ForgetStage(RunsSnapshot& totals, const std::string& stage);
// Counts an ended run with its verdict and, when it has a baseline, its slowdown.
void AddEndedRun(RunsSnapshot& totals, const RunRecord& run, const std::string& verdict,
                 const std::optional<Slowdown>& slowdown);

}  // namespace stagewatch
