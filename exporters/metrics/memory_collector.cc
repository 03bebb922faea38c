#include "exporters/metrics/memory_collector.h"

#include <array>

#include "absl/time/clock.h"
#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {
namespace {

constexpr double kHistUnitSeconds = (1 << HIST_UNIT_SHIFT) * 1e-9;

}  // namespace

MemoryCollector::MemoryCollector(MemoryCollectorSources sources) : s_(std::move(sources)) {}

absl::Status MemoryCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  // The names are the sampler's last refresh: a scrape walks nothing.
  const std::vector<Stage> stages = s_.namer->stages()->KnownStages();
  CollectFaults(stages, out);
  if (s_.tracker) CollectKernel(out);
  absl::Status status = CollectCgroupfs(stages, out);
  if (s_.task_states) CollectTasks(stages, out);
  return status;
}

void MemoryCollector::CollectFaults(const std::vector<Stage>& stages,
                                    std::vector<prometheus::MetricFamily>* out) {
  auto faults = CounterFamily("stagewatch_page_faults_total",
                              "Page faults of the stage's tasks: major ones waited for I/O.");
  // memory.stat's where the stage has it, else the probe's once it counts minor faults.
  const std::shared_ptr<const Snapshot> sampled = s_.sampler->Latest();
  const StageMap<StageFaults>& memcg = sampled->faults;
  std::map<StageId, MemoryStageTotals> bpf;
  const bool by_bpf = s_.tracker && s_.tracker->counts_minor_faults();
  if (by_bpf) bpf = s_.tracker->Totals();
  for (const Stage& stage : stages) {
    StageFaults f;
    if (auto m = memcg.find(stage.id); m != memcg.end()) {
      f = m->second;
    } else if (!by_bpf) {
      continue;
    } else if (auto b = bpf.find(stage.id); b != bpf.end()) {
      f = {.minor = b->second.minor_faults, .major = b->second.major_faults};
    }
    AddCounter(&faults, StageLabels(stage, {{"fault_type", "minor"}}), f.minor);
    AddCounter(&faults, StageLabels(stage, {{"fault_type", "major"}}), f.major);
  }
  out->push_back(std::move(faults));
}

void MemoryCollector::CollectKernel(std::vector<prometheus::MetricFamily>* out) {
  const auto totals = s_.tracker->Totals();
  // Listed after the totals: a stage forgotten meanwhile is left out, not exported as zero.
  const std::vector<Stage> stages = s_.namer->stages()->KnownStages();
  auto stalls = HistogramFamily(
      "stagewatch_memory_reclaim_stall_seconds",
      "Time the stage's tasks spent stalled in direct or cgroup memory reclaim, per pass.");
  const MemoryStageTotals zero;
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.id);
    const MemoryStageTotals& t = it == totals.end() ? zero : it->second;
    // The sum is given in slot units too; truncating it loses under one unit in all.
    AddLog2Histogram(&stalls, StageLabels(stage), t.stall_slots,
                     t.stall_sum_ns >> HIST_UNIT_SHIFT, kHistUnitSeconds, t.stall_above);
  }
  auto overflows = CounterFamily(
      "stagewatch_memory_map_overflows_total",
      "Updates the memory probe dropped because a BPF map was full (map=cgroups|reclaimers).");
  const MemoryTracker::Overflows dropped = s_.tracker->overflows();
  AddCounter(&overflows, {{"map", "cgroups"}}, dropped.cgroups);
  AddCounter(&overflows, {{"map", "reclaimers"}}, dropped.reclaimers);
  for (auto* f : {&stalls, &overflows}) out->push_back(std::move(*f));
}

absl::Status MemoryCollector::CollectCgroupfs(const std::vector<Stage>& stages,
                                              std::vector<prometheus::MetricFamily>* out) {
  // Usage, limits, events and pressure come from the sampler's snapshot, their one reader.
  const std::shared_ptr<const Snapshot> snapshot = s_.sampler->Latest();
  const auto& sampled = snapshot->memory;
  const auto& pressure_totals = snapshot->pressure;

  auto usage_f = GaugeFamily("stagewatch_memory_usage_bytes",
                             "Memory charged to the stage's cgroups (memory.usage_in_bytes, "
                             "memory.current).");
  auto ws = GaugeFamily("stagewatch_memory_working_set_bytes",
                        "Usage minus inactive file cache: what the stage cannot easily give back.");
  auto limit = GaugeFamily("stagewatch_memory_limit_bytes",
                           "Memory limit of the stage's cgroup closest to its limit (the stage's "
                           "own, or a run's beneath it); absent when none has a limit.");
  auto headroom = GaugeFamily("stagewatch_memory_headroom_bytes",
                              "Limit minus usage of the stage's cgroup closest to its limit.");
  auto domains = GaugeFamily("stagewatch_memory_limit_domains",
                             "Cgroups of the stage watched against a limit: its top cgroups and "
                             "those beneath with a memory limit of their own.");
  auto swap = GaugeFamily("stagewatch_memory_swap_bytes", "Swap used by the stage's cgroups.");
  auto peak = GaugeFamily("stagewatch_memory_peak_bytes",
                          "Highest usage of the stage since the agent started: size limits by it.");
  auto near = CounterFamily("stagewatch_memory_near_limit_seconds_total",
                            "Time any cgroup of the stage with a limit was at or above "
                            "memory.near_limit_fraction of it.");
  auto events = CounterFamily("stagewatch_memory_events_total",
                              "Memory events of the stage's cgroups (memory.events; on cgroup v1 "
                              "failcnt and oom_kill of each limited cgroup), since the agent saw "
                              "the cgroup.");
  auto mem_wait = CounterFamily("stagewatch_pressure_memory_waiting_seconds_total",
                                "Time some of the stage's tasks stalled on memory (PSI some).");
  auto mem_stall = CounterFamily("stagewatch_pressure_memory_stalled_seconds_total",
                                 "Time all of the stage's tasks stalled on memory (PSI full).");
  auto io_wait = CounterFamily("stagewatch_pressure_io_waiting_seconds_total",
                               "Time some of the stage's tasks stalled on I/O (PSI some).");
  auto io_stall = CounterFamily("stagewatch_pressure_io_stalled_seconds_total",
                                "Time all of the stage's tasks stalled on I/O (PSI full).");
  for (const Stage& stage : stages) {
    if (auto it = sampled.find(stage.id); it != sampled.end()) {
      const StageMemory& m = it->second;
      AddGauge(&usage_f, StageLabels(stage), m.usage_bytes);
      AddGauge(&ws, StageLabels(stage), m.working_set_bytes);
      if (m.limit_bytes) AddGauge(&limit, StageLabels(stage), *m.limit_bytes);
      if (m.headroom_bytes) AddGauge(&headroom, StageLabels(stage), *m.headroom_bytes);
      AddGauge(&domains, StageLabels(stage), m.limit_domains);
      if (m.swap_bytes) AddGauge(&swap, StageLabels(stage), *m.swap_bytes);
      AddGauge(&peak, StageLabels(stage), m.peak_bytes);
      AddCounter(&near, StageLabels(stage), m.near_limit_seconds);
      for (size_t i = 0; i < kMemoryEvents.size(); i++) {
        AddCounter(&events, StageLabels(stage, {{"event", kMemoryEvents[i]}}), m.events[i]);
      }
    }
    if (auto it = pressure_totals.find(stage.id); it != pressure_totals.end()) {
      const StagePressure& p = it->second;
      AddCounter(&mem_wait, StageLabels(stage), p.memory_some_us * 1e-6);
      AddCounter(&mem_stall, StageLabels(stage), p.memory_full_us * 1e-6);
      AddCounter(&io_wait, StageLabels(stage), p.io_some_us * 1e-6);
      AddCounter(&io_stall, StageLabels(stage), p.io_full_us * 1e-6);
    }
  }
  auto skipped = CounterFamily(
      "stagewatch_memory_limit_domain_errors_total",
      "Samples in which a limit domain was skipped, by reason: its files vanished or could not "
      "be read (read), or memory.max_limit_domains was reached (overflow).");
  AddCounter(&skipped, {{"reason", "read"}}, s_.sampler->domain_skips());
  AddCounter(&skipped, {{"reason", "overflow"}}, s_.sampler->domain_overflows());
  for (auto* f : {&usage_f, &ws, &limit, &headroom, &domains, &swap, &peak, &near, &events,
                  &mem_wait, &mem_stall, &io_wait, &io_stall, &skipped}) {
    out->push_back(std::move(*f));
  }
  return absl::OkStatus();
}

void MemoryCollector::CollectTasks(const std::vector<Stage>& stages,
                                   std::vector<prometheus::MetricFamily>* out) {
  const std::map<StageId, TaskStateCounts> counts = s_.task_states->Counts(absl::Now());
  std::map<StageId, SchedStageTotals> sched;
  if (s_.sched) sched = s_.sched->Totals();

  auto tasks = GaugeFamily(
      "stagewatch_tasks",
      "The stage's tasks by state: running (on a CPU now, from the sched probe), runnable "
      "(waiting for a CPU), uninterruptible (D), sleeping, stopped, zombie.");
  for (const Stage& stage : stages) {
    auto it = counts.find(stage.id);
    if (it == counts.end()) continue;
    const TaskStateCounts& t = it->second;
    auto sc = sched.find(stage.id);
    // /proc says R for both running and queued; the probe knows who is on a CPU.
    const uint64_t running = sc == sched.end() ? 0 : std::min(sc->second.running_now, t.runnable);
    if (s_.sched) AddGauge(&tasks, StageLabels(stage, {{"state", "running"}}), running);
    AddGauge(&tasks, StageLabels(stage, {{"state", "runnable"}}), t.runnable - running);
    AddGauge(&tasks, StageLabels(stage, {{"state", "uninterruptible"}}), t.uninterruptible);
    AddGauge(&tasks, StageLabels(stage, {{"state", "sleeping"}}), t.sleeping);
    AddGauge(&tasks, StageLabels(stage, {{"state", "stopped"}}), t.stopped);
    AddGauge(&tasks, StageLabels(stage, {{"state", "zombie"}}), t.zombie);
  }
  out->push_back(std::move(tasks));
}

}  // namespace stagewatch::exporters
