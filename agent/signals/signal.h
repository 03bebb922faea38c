// A signal (oom, sched, memory, cgroup, runs) as one module: its probe, its tracker, its
// collector, its `collectors.<name>` switch and its `stagewatch features` lines. The agent, the
// features report and the command line's --collector.<name> flags all iterate Signals().
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "sampler/sample_snapshot.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"

namespace stagewatch {

struct Config;
struct CgroupLayout;
class AnomalyEngine;
class CgroupNamer;
class CgroupPathCache;
class LifecycleProbe;
class MemoryProbe;
class MemorySampler;
class MemoryTracker;
class OomProbe;
class OomTracker;
class RunWatcher;
class SchedProbe;
class SchedTracker;
class SnapshotSource;
class TaskStatesProbe;
class StageResolver;
namespace exporters {
class Collector;
class CollectorRegistry;
}

// What one probe module says of its probes and programs, asked at every scrape.
struct ProbeReport {
  std::function<std::vector<ProbeStatus>()> statuses;
  std::function<std::vector<ProgramStats>()> programs;
};

// Keeps a started probe module, or the reason it could not start, in `reports`.
template <typename Probe>
std::unique_ptr<Probe> Adopt(absl::StatusOr<std::unique_ptr<Probe>> started,
                             std::vector<ProbeReport>* reports) {
  if (!started.ok()) {
    reports->push_back(
        {[why = std::string(started.status().message())] { return Probe::NotStarted(why); },
         [] { return std::vector<ProgramStats>(); }});
    return nullptr;
  }
  const Probe* probe = started->get();
  reports->push_back({[probe] { return probe->statuses(); },
                      [probe] { return probe->program_stats(); }});
  return *std::move(started);
}

// What a probe module started for `stagewatch features` says of its probes (it stops when
// `started` goes), or why it could not start.
template <typename Probe>
std::vector<ProbeStatus> StatusesOf(const absl::StatusOr<std::unique_ptr<Probe>>& started) {
  if (!started.ok()) return Probe::NotStarted(std::string(started.status().message()));
  return (*started)->statuses();
}

// A ring buffer the agent drains on a thread of its own (app/ring_pollers.h).
struct RingPoller {
  const char* probe;
  int ready_fd;                  // readable when events are queued
  std::function<int()> consume;  // handles them; the number handled or a negative errno
};

// The parts the signals started, for one another (runs reads the sched and memory probes),
// the anomaly feeder and the agent's self-metrics. Null where a signal is off or failed.
struct RunningSignals {
  std::unique_ptr<LifecycleProbe> cgroup_probe;
  std::unique_ptr<OomProbe> oom_probe;
  std::unique_ptr<SchedProbe> sched_probe;
  std::unique_ptr<SchedTracker> sched;
  std::unique_ptr<MemoryProbe> memory_probe;
  std::unique_ptr<MemoryTracker> memory;
  std::unique_ptr<TaskStatesProbe> task_states_probe;
  std::unique_ptr<RunWatcher> run_watcher;
  // The sampler's snapshots as the run watcher asks for them; the agent detaches it before
  // it destroys the sampler.
  std::shared_ptr<SnapshotSource> snapshots;
  std::vector<ProbeReport> probe_reports;
  std::vector<RingPoller> pollers;

  RunningSignals();
  ~RunningSignals();  // the parts stop in the order Stop() gives
  // Stops what reads the others first: runs, then each tracker before its probe.
  void Stop();
};

// What the agent lends every signal it starts. The first phase (Signal::starts_first) runs
// before the agent serves or names cgroups: there `namer`, `anomalies`, `sampler` and
// `collectors` are still null.
struct SignalContext {
  const Config& config;
  const CgroupLayout& layout;
  const KernelFeatures& features;
  CgroupPathCache* paths = nullptr;
  StageResolver* stages = nullptr;
  OomTracker* oom = nullptr;
  std::atomic<RunWatcher*>* runs = nullptr;  // set by the runs signal once its watcher is up
  CgroupNamer* namer = nullptr;
  AnomalyEngine* anomalies = nullptr;
  MemorySampler* sampler = nullptr;
  exporters::CollectorRegistry* collectors = nullptr;
  RunningSignals* running = nullptr;
};

// What `stagewatch features` starts a probe with.
struct ProbeTrial {
  KernelFeatures features;
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  bool lifecycle_events = true;  // cgroup.lifecycle_events
  bool task_iterator = true;     // memory.task_iterator
};

struct Signal {
  std::string_view name;
  // Switched by `collectors.<name>` and --collector.<name> (the configuration is told these
  // names: CollectorFlagNames()); otherwise always started (a setting of its own, such as
  // cgroup.lifecycle_events or runs.ledger_path, may idle it).
  bool collector_flag = false;
  // Started before the agent serves or names a cgroup (the lifecycle probe's events name them).
  bool starts_first = false;
  // `stagewatch features`: its probes started for real (then stopped), or why each could not
  // start. Both null for a signal without a probe of its own.
  std::vector<ProbeStatus> (*try_probes)(const ProbeTrial& trial) = nullptr;
  std::vector<ProbeStatus> (*not_started)(const std::string& why) = nullptr;
  // The agent: starts its probe and tracker into ctx.running, and returns its collector (null
  // where it has none, or not this time), which StartSignals() adds.
  std::unique_ptr<exporters::Collector> (*start)(const SignalContext& ctx) = nullptr;
  // Whether start() makes a collector: named after the signal (Collector::name() is `name`,
  // the scrape's collector="<name>"), which StartSignals() checks.
  bool adds_collector = false;
  // The parts of the sampler's Snapshot its collector adapts (SnapshotPart bits; 0: none).
  // The sampler reads the parts of the signals that are on.
  unsigned snapshot_parts = 0;
};

// Every signal, in the order the agent starts them (within each phase) and `stagewatch
// features` lists their probes.
const std::vector<Signal>& Signals();

// The names `collectors:` and --collector.<name> switch, in Signals() order.
std::vector<std::string> CollectorFlagNames();

// Starts the signals of one phase (Signal::starts_first == first) that ctx.config switches on,
// in order, and adds their collectors to ctx.collectors. The one check that a collector is
// named after its signal: the error names the first signal whose collector is not, or that
// makes one without saying so (adds_collector); every signal starts all the same, and a
// collector made in the first phase, which has no registry, is dropped.
absl::Status StartSignals(const std::vector<Signal>& signals, const SignalContext& ctx,
                          bool first);

}  // namespace stagewatch
