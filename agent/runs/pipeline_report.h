// A pipeline run (a night) as `stagewatch pipelines show`, /pipelines/<id> and its JSON tell it:
// its runs, its verdict (its worst run's), its wall time against its own clean nights, whether
// it ended before its deadline, and which runs' excess over their own baselines made it longer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/pipelines_config.h"
#include "config/runs_config.h"
#include "nlohmann/json.hpp"
#include "runs/baseline_comparison.h"
#include "runs/ledger.h"
#include "runs/run_record.h"
#include "runs/verdict.h"

namespace stagewatch {

// A point whose pressure is above this share of its interval marks the run as waiting for CPU
// or stalled on memory there, on the timeline.
inline constexpr double kStallShare = 0.10;
// Earlier pipeline runs looked at, at most, for clean nights to compare with.
inline constexpr int kNightBaselineScan = 500;

struct PipelineRunMember {
  RunRecord run;
  Verdict verdict;
  BaselineComparison baseline;  // the run against its own stage's clean runs
  // Its end held the night back: the night's last run, or one whose end the next run on that
  // chain started after (the runs ended last before each one started).
  bool on_critical_path = false;
};

// A run whose excess over its own baseline made the night longer.
struct LongerRun {
  std::string id;
  std::string stage;
  double excess_seconds = 0;
  double ratio = 0;
  SlowdownCause largest_cause = SlowdownCause::kUnexplained;
  double largest_cause_seconds = 0;
};

struct NightBaseline {
  int wanted = 0;                   // runs.baseline_runs
  std::vector<std::string> nights;  // earlier pipeline runs whose runs were all clean, newest first
  std::optional<double> median_wall_seconds;  // with at least kMinBaselineRuns of them
};

struct PipelineDeadline {
  absl::Duration time_of_day;  // pipelines.<name>.deadline
  absl::Time at;               // for this night
  std::optional<bool> met;     // nullopt while the night runs and the deadline is ahead
};

struct PipelineRunReport {
  std::string pipeline;
  std::string pipeline_run;
  std::vector<PipelineRunMember> runs;  // in the order they started
  VerdictKind verdict = VerdictKind::kRunning;
  absl::Time first_start;
  std::optional<absl::Time> last_end;  // nullopt while a run is open
  NightBaseline baseline;
  std::optional<PipelineDeadline> deadline;  // when the pipeline has one
  std::vector<LongerRun> made_longer;        // largest excess first

  std::optional<double> WallSeconds() const;
  // When no run made the night longer: "no run on its critical path took longer than usual",
  // and how many of those runs had no baseline to say.
  std::string NoneLongerText() const;
  // "1.3× its usual 2h40m (median of 5 clean nights)", or why there is no baseline yet.
  std::string WallText() const;
};

// The pipeline run `pipeline_run` of `pipeline`, or nullopt when the ledger has no run of it.
// `config`: the pipeline's settings (nullptr: not configured, no deadline); `now` decides a
// deadline while the night runs; `zone`: the local time zone the pipeline's times are in.
absl::StatusOr<std::optional<PipelineRunReport>> ReportPipelineRun(
    Ledger& ledger, const std::string& pipeline, const std::string& pipeline_run,
    const RunsConfig& runs, const PipelineConfig* config, absl::Time now, absl::TimeZone zone);

// Which pipeline has the pipeline run `pipeline_run`: `pipeline` when given (NotFound when it
// has none of that id), else the one pipeline that has it (NotFound for none,
// FailedPrecondition naming them when two or more share it).
absl::StatusOr<std::string> PipelineOfRun(Ledger& ledger, const std::string& pipeline,
                                          const std::string& pipeline_run);

nlohmann::json PipelineRunSummaryJson(const PipelineRunSummary& summary);
nlohmann::json PipelineRunReportJson(const PipelineRunReport& report, const RunsConfig& config);
// `pipelines list`: one line per pipeline run.
std::string PipelineRunsTable(const std::vector<PipelineRunSummary>& runs);
// `pipelines show`: the night's verdict and wall, then its runs.
std::string PipelineRunText(const PipelineRunReport& report);

}  // namespace stagewatch
