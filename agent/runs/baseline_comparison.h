// A run against its baseline, as `runs show`, `/runs/<id>` and the launcher's closing line
// tell it: "1.9× its usual 41 s; of the 37 s extra, 24 s waiting for CPU ...", or why there is
// no baseline yet.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/runs_config.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/baseline.h"
#include "runs/run_record.h"
#include "runs/slowdown.h"
#include "runs/verdict.h"

namespace stagewatch {

struct BaselineComparison {
  int wanted = 0;  // runs.baseline_runs
  int found = 0;   // clean runs of the stage with the same limits, before this one
  std::optional<Baseline> baseline;
  std::optional<Slowdown> slowdown;  // an ended run with a baseline

  // "1.9× its usual 41 s; of the 37 s extra, ..." or "no baseline yet: 2 clean runs of
  // validate with these limits before it, 3 needed".
  std::string Text(const std::string& stage) const;
  nlohmann::json ToJson() const;
};

nlohmann::json SlowdownToJson(const Slowdown& slowdown);

// The verdict with the comparison: "degraded: 1.9× its usual 41 s; of the 37 s extra, ...".
// The comparison stands for a clean or degraded verdict's reasons (it splits the same lost
// time); an interruption or a missing baseline keeps the verdict's own words first.
std::string VerdictWithBaseline(const Verdict& verdict, const BaselineComparison& comparison,
                                const std::string& stage);

// `run` against its baseline in `ledger` (Ledger::CleanRunsBefore, runs.baseline_runs).
absl::StatusOr<BaselineComparison> CompareRunWithBaseline(Ledger& ledger, const RunRecord& run,
                                                          const RunsConfig& runs);

// `runs show`'s block after the facts: the baseline, and the split of the excess.
std::string BaselineDetails(const RunRecord& run, const BaselineComparison& comparison);

// `run` against `candidates`, its stage's clean runs with the same limits before it, newest
// first (Ledger::CleanRunsBefore, at most `wanted`).
BaselineComparison CompareWithBaseline(const RunRecord& run,
                                       const std::vector<RunRecord>& candidates, int wanted);

}  // namespace stagewatch
