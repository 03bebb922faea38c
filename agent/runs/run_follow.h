// `runs show ID --follow`: a running run's figures as they reach the ledger (the launcher
// writes its samples every few intervals, the agent those of discovered runs each pass), one
// line a sample, until the run ends; then the run's first line (its verdict).
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "config/runs_config.h"
#include "runs/ledger.h"

namespace stagewatch {

// One sample: "+12.0 s  memory 87.3 MiB / 200.0 MiB  cpu 0.46 CPUs  stalled mem 0% cpu 12%".
std::string SampleLine(const RunSample& sample, absl::Time run_start);

// Reads `ledger` every `poll` until the run ends; NotFound for an unknown run.
absl::Status FollowRun(Ledger& ledger, const std::string& id, const RunsConfig& config,
                       std::ostream& out, absl::Duration poll = absl::Seconds(1));

}  // namespace stagewatch
