// Runs whose launcher died (SIGKILL, a crash, a lost node session): the command goes on, and
// once its cgroup holds no task, whoever finds the run closes it the same way. The agent does it
// the moment the last task exits; without an agent, the next `stagewatch run` of the stage or
// `stagewatch runs list` does.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cgroup/layout.h"
#include "runs/ledger.h"
#include "runs/run_record.h"

namespace stagewatch {

// Whether the launcher of `start` lives: /proc/<pid> is a process that is no zombie and that
// started before the run did (a process that got the pid after the launcher died is not it).
// `proc` stands in for /proc in tests.
bool LauncherAlive(const RunStart& start, const std::string& proc = "/proc");

// When a run of a dead launcher was last known alive, where the kernel did not say when its
// last task exited (no agent watched, or the kernel lacks the tracepoint): the newest of its
// last point in the ledger (the launcher writes them every 5 samples) and its start.
absl::Time LastKnownAlive(Ledger& ledger, const RunStart& start);

struct OrphanEnd {
  RunEnd end;              // at the time given, with the facts its leftover cgroup held
  absl::Status removed;    // of its cgroups: fails on a read-only cgroupfs, or without permission
};

// Reads the end facts of the dead launcher's run `start` from its leftover cgroup (as the
// launcher does), then removes the cgroup in every hierarchy with its sub-cgroups, and the
// shared `<stage>` and `<directory>` cgroups when no other run uses them. FailedPrecondition,
// with nothing done, while a task is left in it (or that cannot be read). A cgroup gone
// already gives an end without facts.
absl::StatusOr<OrphanEnd> FinishOrphanCgroup(const CgroupLayout& layout, const RunStart& start,
                                             absl::Time end, RunCloser closer);

// `stagewatch run` and `stagewatch runs list` without an agent: closes every open launcher run
// of `stage` ("" for every stage) whose launcher is dead and whose cgroup holds no task (or is
// gone), ended when last known alive. An end the ledger cannot take is kept in the pending
// directory. Says what it closed on `log`; returns how many.
int CloseRunsOfDeadLaunchers(Ledger& ledger, const CgroupLayout& layout, const std::string& stage,
                             std::ostream& log);

// The same (without an agent) for the launcher runs whose cgroups are beneath `stage_path`
// (`<parent>/<directory>/<stage>` in the keyed hierarchy) other than `own_id`, and removes the
// empty cgroups there of runs that have ended (an agent that may not write cgroupfs closes a
// dead launcher's run and leaves them).
void TidyStageCgroups(Ledger& ledger, const CgroupLayout& layout, const std::string& stage_path,
                      const std::string& own_id, std::ostream& log);

// `stagewatch runs list`: records the kept ends, and without an agent closes the runs of dead
// launchers, when the ledger at `ledger_path` exists and this user may write it; quiet otherwise.
void TidyLedgerForListing(const std::string& ledger_path, const RunsConfig& judging,
                          const std::string& stage,
                          std::ostream& log);

}  // namespace stagewatch
