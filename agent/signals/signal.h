// A signal (oom, sched, memory, lifecycle, runs) as one module, in agent/signals/<name>/: its
// probe, its tracker, its collector, its `collectors.<name>` switch and its `stagewatch
// features` lines. Each registers itself in one line (RegisterSignal); the agent, the features
// report and the --collector.<name> flags all iterate Signals(), and name no signal.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "anomaly/anomaly_feeder.h"
#include "bpf/cgroup_key.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "runs/run_watcher.h"
#include "sampler/collect_cadence.h"
#include "sampler/sample_snapshot.h"
#include "signals/signal_bus.h"
#include "stages/stage_directory.h"

namespace stagewatch {

struct Config;
struct CgroupLayout;
class AnomalyEngine;
class CgroupNamer;
class CgroupPathCache;
class MemorySampler;
class SnapshotSource;
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

// What the signals started, by purpose, for one another and the agent: never a member per
// signal. A signal keeps the parts it started here (Keep), and one started after it may use
// them (Find); Stop() stops them in the reverse of their start.
class RunningSignals {
 public:
  RunningSignals();
  ~RunningSignals();  // Stop()s
  RunningSignals(const RunningSignals&) = delete;
  RunningSignals& operator=(const RunningSignals&) = delete;

  std::vector<ProbeReport> probe_reports;
  std::vector<RingPoller> pollers;
  // What the probes hold of a run's cgroups, each reader filled in by the signal whose probe
  // observes it (the runs signal reads them; an empty one is a fact not observed).
  RunProbeReaders run_readers;
  bool observes_oom_kills = false;  // a run without kill events had none
  bool observes_populated = false;  // a run's last task's exit comes as an event
  // Events of cgroups that were gone before they could be named, per signal that counts them.
  std::vector<std::function<uint64_t()>> unknown_cgroup_counts;
  // Each signal's work on the sampler's clock, after each snapshot: collecting its tracker
  // (its collector adapts the last collection; a scrape reads nothing), feeding its detectors.
  std::vector<SampleHook> sample_hooks;

  // Keeps `part` until Stop(); null stays null. Returns it, for the caller to use.
  template <typename T>
  T* Keep(std::unique_ptr<T> part) {
    T* raw = part.get();
    if (raw != nullptr) {
      parts_.push_back(std::shared_ptr<void>(std::move(part)));
      found_[std::type_index(typeid(T))] = raw;
    }
    return raw;
  }
  // The part of type T a signal started before, or null (its signal is off, or failed).
  template <typename T>
  T* Find() const {
    auto it = found_.find(std::type_index(typeid(T)));
    return it == found_.end() ? nullptr : static_cast<T*>(it->second);
  }
  void Stop();

 private:
  std::vector<std::shared_ptr<void>> parts_;  // in start order
  std::unordered_map<std::type_index, void*> found_;
};

// What the agent lends every signal it starts. The first phase (Signal::starts_first) runs
// before the agent serves or names cgroups: there `namer`, `anomalies`, `sampler`,
// `snapshots` and `collectors` are still null.
struct SignalContext {
  const Config& config;
  const CgroupLayout& layout;
  const KernelFeatures& features;
  CgroupPathCache* paths = nullptr;
  StageResolver* stages = nullptr;
  SignalBus* bus = nullptr;
  CgroupNamer* namer = nullptr;
  AnomalyEngine* anomalies = nullptr;
  MemorySampler* sampler = nullptr;
  SnapshotSource* snapshots = nullptr;  // the sampler's, for threads that outlive it
  exporters::CollectorRegistry* collectors = nullptr;
  RunningSignals* running = nullptr;
};

// What `stagewatch features` starts a probe with.
struct ProbeTrial {
  KernelFeatures features;
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  bool lifecycle_events = true;  // cgroup.lifecycle_events
  bool task_iterator = true;     // memory.task_iterator
  bool minor_faults = true;      // BPF counts minor faults (FaultCounting::bpf_minor)
};

struct Signal {
  std::string_view name;
  // Where it starts and is listed among the others (lower first, within its phase): a signal
  // that uses another's parts comes after it.
  int order = 0;
  // Switched by `collectors.<name>` and --collector.<name> (the configuration is told these
  // names: CollectorFlagNames()); otherwise always started (a setting of its own, such as
  // cgroup.lifecycle_events or runs.ledger_path, may idle it).
  bool collector_flag = false;
  // Started before the agent serves or names a cgroup (the lifecycle probe's events name them).
  bool starts_first = false;
  // Its probe's events name cgroups as they are made; where it does not attach, walks do.
  bool names_cgroups = false;
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

// A signal's own file registers it, in one line:
//   [[maybe_unused]] const bool kRegistered = RegisterSignal({.name = "sched", ...});
bool RegisterSignal(Signal signal);

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
