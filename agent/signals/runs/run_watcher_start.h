// The agent's runs: the ledger opened for the run watcher, and what the sched and memory probes
// hold for a run's cgroups.
#pragma once

#include <functional>
#include <memory>

#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "sampler/sample_snapshot.h"
#include "bpf/oom.h"
#include "signals/memory/memory_probe.h"
#include "signals/sched/sched_probe.h"
#include "runs/run_watcher.h"

namespace stagewatch {

// A null probe leaves its readers empty: those facts are then not observed.
RunProbeReaders MakeRunProbeReaders(const SchedProbe* sched, const MemoryProbe* memory,
                                    CgroupNamer* namer);

// The victim of an OOM kill event, as a run's row keeps it.
OomVictim OomVictimOf(const oom_event& event);

// Opens runs.ledger_path and starts watching runs. A ledger that cannot be opened (no
// StateDirectory, a read-only disk, a file that is not a ledger) is a warning: the agent runs
// on without runs, and nullptr is returned. `latest_snapshot`: the memory sampler's, where
// discovered runs that are limit domains take their memory from.
std::unique_ptr<RunWatcher> StartRunWatcher(
    const Config& config, const CgroupLayout& layout, StageResolver* stages,
    RunProbeReaders readers, bool oom_observed, bool populated_events,
    std::function<std::shared_ptr<const Snapshot>()> latest_snapshot);

}  // namespace stagewatch
