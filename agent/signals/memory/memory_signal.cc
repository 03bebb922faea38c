// memory: reclaim stalls from the memory probe; page faults from the sampler's memory.stat
// where the memory controller is, else the memory probe (signals/memory/fault_counting.h);
// usage, limits and near-limit time from the sampler's snapshot; task states from the
// task_states iterator, else /proc.
#include "anomaly/anomaly_engine.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/memory_collector.h"
#include "log.h"
#include "signals/memory/fault_counting.h"
#include "signals/memory/memory_probe.h"
#include "signals/memory/memory_tracker.h"
#include "signals/memory/task_states_probe.h"
#include "signals/memory/task_states_tracker.h"
#include "signals/sched/sched_tracker.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  std::vector<ProbeStatus> all =
      StatusesOf(MemoryProbe::Start(
          {.key = t.key, .features = t.features, .minor_faults = t.minor_faults}));
  for (ProbeStatus& s : StatusesOf(TaskStatesProbe::Start(
           {.enabled = t.task_iterator, .key = t.key, .features = t.features}))) {
    all.push_back(std::move(s));
  }
  return all;
}

std::vector<ProbeStatus> NotStarted(const std::string& why) {
  std::vector<ProbeStatus> all = MemoryProbe::NotStarted(why);
  for (ProbeStatus& s : TaskStatesProbe::NotStarted(why)) all.push_back(std::move(s));
  return all;
}

// A run's reclaim stalls, from the probe's map.
void ObserveRuns(const MemoryProbe* memory, RunProbeReaders& r) {
  // Its cgroups looked up one by one: a storm of run ends beside thousands of cgroups reads a
  // few entries each, not the whole map each.
  r.reclaim_stall_seconds = [memory](const std::set<uint64_t>& ids) -> std::optional<double> {
    uint64_t ns = 0;
    for (uint64_t id : ids) ns += memory->ReclaimStallNs(id).value_or(0);
    return ns / 1e9;
  };
}

// Prometheus' usual scrape interval.
constexpr absl::Duration kProcTaskStatesInterval = absl::Seconds(15);

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  const FaultCounting counting = ChooseFaultCounting(ctx.config.memory.fault_source, ctx.layout);
  Log::Info("page faults", {{"memcg", counting.memcg}, {"bpf", counting.bpf_minor},
                            {"why", counting.why}});
  MemoryProbe* probe = r.Keep(Adopt(MemoryProbe::Start({.key = ctx.layout.key,
                                                        .features = ctx.features,
                                                        .minor_faults = counting.bpf_minor}),
                                    &r.probe_reports));
  MemoryTracker* tracker = nullptr;
  if (probe != nullptr) {
    tracker = r.Keep(std::make_unique<MemoryTracker>(probe, ctx.namer));
    r.unknown_cgroup_counts.push_back([tracker] { return tracker->unknown_cgroups(); });
    ObserveRuns(probe, r.run_readers);
  }
  TaskStatesProbe* iterator = r.Keep(Adopt(
      TaskStatesProbe::Start({.enabled = ctx.config.memory.task_iterator,
                              .key = ctx.layout.key, .features = ctx.features}),
      &r.probe_reports));
  // Without the iterator, task states are a file per cgroup and one per thread (15.7 ms of CPU
  // a pass at 1,000 cgroups): counted once per usual scrape interval.
  const absl::Duration task_states_every =
      iterator ? kExpositionCollectInterval : kProcTaskStatesInterval;
  TaskStatesTracker* task_states = r.Keep(std::make_unique<TaskStatesTracker>(
      iterator, ctx.namer, ctx.layout.key_root, task_states_every));
  if (probe && counting.bpf_when_uncovered) {
    // A stage without the memory controller is found: BPF counts its faults from now on.
    r.sample_hooks.push_back([probe, sampler = ctx.sampler, tried = false](
                                 absl::Time, const StageDirectory&) mutable {
      if (tried || sampler->Latest()->faults_uncovered.empty()) return;
      tried = true;
      if (const absl::Status status = probe->CountMinorFaults(); status.ok()) {
        Log::Info("a stage has no memory controller: BPF counts page faults from now on");
      } else {
        Log::Warn("a stage has no memory controller, and BPF cannot count its page faults",
                  {{"error", status.message()}});
      }
    });
  }
  r.sample_hooks.push_back([tracker, task_states, engine = ctx.anomalies, sampler = ctx.sampler,
                            due = Cadence(kExpositionCollectInterval)](
                               absl::Time now, const StageDirectory& known) mutable {
    if (task_states->Due(now)) task_states->Collect(sampler->Latest()->samples_a_stage_ran);
    if (due.Due(now) && tracker) tracker->Collect();
    if (!tracker) return;
    // The fault-storm detector keeps every sample: it trims lone bursts out of its window by
    // whole sampling intervals, which coarser points would not leave room for. Between the
    // collections above, the map is read only when a major fault was counted meanwhile.
    tracker->CollectForMajorFaults();
    for (const auto& [id, t] : tracker->Totals()) {
      const Stage* stage = known.Find(id);
      if (stage && id != kUnattributedStageId) engine->OnMajorFaults(*stage, now, t.major_faults);
    }
  });
  // Listed after "sched", whose tracker tells the tasks running right now.
  return std::make_unique<exporters::MemoryCollector>(
      exporters::MemoryCollectorSources{.tracker = tracker,
                                        .sampler = ctx.sampler,
                                        .sched = r.Find<SchedTracker>(),
                                        .namer = ctx.namer,
                                        .task_states = task_states});
}

[[maybe_unused]] const bool kRegistered = RegisterSignal({.name = "memory",
                                                          .order = 30,
                                                          .collector_flag = true,
                                                          .try_probes = TryProbes,
                                                          .not_started = NotStarted,
                                                          .start = Start,
                                                          .adds_collector = true,
                                                          .snapshot_parts = kMemoryPart});

}  // namespace
}  // namespace stagewatch
