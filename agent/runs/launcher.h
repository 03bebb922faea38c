// `stagewatch run`: runs a command as one run of a stage, in a cgroup of its own with the
// given limits, and records it in the ledger with what cgroupfs measured.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/runs_config.h"
#include "runs/run_record.h"

namespace stagewatch {

// The smallest --memory-high taken. memory.high throttles the cgroup's allocations above it
// and never kills: far below what even a shell needs (about 1 MiB), every allocation stalls in
// reclaim and the command crawls for ever. 4 MiB runs `sh -c` and coreutils.
inline constexpr uint64_t kMinMemoryHighBytes = uint64_t{4} << 20;

// How long the rest of a run's processes have, after a signal sent through the launcher ended
// the command, to end on their own before they are SIGKILLed (`docker stop` gives 10 s too).
inline constexpr absl::Duration kSignalGrace = absl::Seconds(10);

struct LaunchOptions {
  std::string stage;
  std::string run_id;  // "" generates one
  std::string pipeline;
  std::string pipeline_run;  // the pipeline's run (a night) this run belongs to
  std::string cgroup_parent;  // "" for the caller's own cgroup in each hierarchy
  std::string ledger_path;
  RunLimits limits;
  std::vector<std::string> command;
  std::string discovery_directory = "stagewatch";
  double near_limit_fraction = 0.9;
  absl::Duration sample_interval = absl::Seconds(1);
  absl::Duration agent_facts_wait = absl::Seconds(5);  // for the verdict printed at the end
  RunsConfig runs;  // for the verdict printed at the end
};

// The command's environment gains STAGEWATCH_RUN_ID, STAGEWATCH_STAGE, STAGEWATCH_PIPELINE and
// STAGEWATCH_PIPELINE_RUN (so that a driver script's own launches share its pipeline run), and
// STAGEWATCH_RESULTS: a file it may write its results to (run_results.h), recorded with the run.
// Errors found before the command starts come back as a Status, with nothing left behind.
// Once it has started, the result is the exit code to leave with: the command's, 128 + N when
// signal N ended it, 127 when it could not be run.
absl::StatusOr<int> LaunchRun(const LaunchOptions& options, std::ostream& log);

}  // namespace stagewatch
