#include "exporters/memory_collector.h"

#include <array>

#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"
#include "cgroup/task_states.h"
#include "exporters/metric_builders.h"
#include "exporters/stage_labels.h"

namespace stagewatch::exporters {
namespace {

// memory.events keys on v2; on v1, failcnt and oom_kill stand in.
constexpr std::array<const char*, 7> kMemoryEvents = {"low", "high", "max", "oom", "oom_kill",
                                                      "oom_group_kill", "failcnt"};
constexpr double kHistUnitSeconds = (1 << HIST_UNIT_SHIFT) * 1e-9;

struct StageUsage {
  uint64_t usage = 0, working_set = 0, limit = 0, swap = 0;
  bool unlimited = false, has_swap = false;
};

}  // namespace

MemoryCollector::MemoryCollector(MemoryCollectorSources sources)
    : s_(std::move(sources)), events_(kMemoryEvents.size()), pressure_(4) {}

absl::Status MemoryCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  s_.namer->Refresh();
  const std::vector<Stage> stages = s_.namer->stages()->KnownStages();
  if (s_.tracker) CollectKernel(out);
  absl::Status status = CollectCgroupfs(stages, out);
  CollectTasks(stages, out);
  return status;
}

void MemoryCollector::CollectKernel(std::vector<prometheus::MetricFamily>* out) {
  s_.tracker->Collect();
  const auto totals = s_.tracker->Totals();
  // Listed after the totals: a stage forgotten meanwhile is left out, not exported as zero.
  const std::vector<Stage> stages = s_.namer->stages()->KnownStages();
  auto faults = CounterFamily("stagewatch_page_faults_total",
                              "Page faults of the stage's tasks: major ones waited for I/O.");
  auto stalls = HistogramFamily(
      "stagewatch_memory_reclaim_stall_seconds",
      "Time the stage's tasks spent stalled in direct or cgroup memory reclaim, per pass.");
  const MemoryStageTotals zero;
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.name);
    const MemoryStageTotals& t = it == totals.end() ? zero : it->second;
    AddCounter(&faults, StageLabels(stage, {{"fault_type", "minor"}}), t.minor_faults);
    AddCounter(&faults, StageLabels(stage, {{"fault_type", "major"}}), t.major_faults);
    // The sum is given in slot units too; truncating it loses under one unit in all.
    AddLog2Histogram(&stalls, StageLabels(stage), t.stall_slots,
                     t.stall_sum_ns >> HIST_UNIT_SHIFT, kHistUnitSeconds, t.stall_above);
  }
  auto overflows = CounterFamily(
      "stagewatch_memory_map_overflows_total",
      "Updates the memory probe dropped because a BPF map was full (map=cgroups|reclaimers).");
  AddCounter(&overflows, {{"map", "cgroups"}}, s_.probe->cgroup_overflows());
  AddCounter(&overflows, {{"map", "reclaimers"}}, s_.probe->reclaim_overflows());
  for (auto* f : {&faults, &stalls, &overflows}) out->push_back(std::move(*f));
}

absl::Status MemoryCollector::CollectCgroupfs(const std::vector<Stage>& stages,
                                              std::vector<prometheus::MetricFamily>* out) {
  absl::Status first_error;
  std::map<std::string, StageUsage> usage;
  std::vector<CgroupCounterSample> event_samples, pressure_samples;
  for (const NamedCgroup& top : s_.namer->StageTops()) {
    absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(s_.layout, top.path);
    if (!m.ok()) {
      if (!absl::IsNotFound(m.status()) && first_error.ok()) first_error = m.status();
      continue;
    }
    StageUsage& u = usage[top.stage.name];
    u.usage += m->usage_bytes;
    u.working_set += m->working_set_bytes;
    u.unlimited |= !m->limit_bytes;
    u.limit += m->limit_bytes.value_or(0);
    u.has_swap |= m->swap_bytes.has_value();
    u.swap += m->swap_bytes.value_or(0);
    std::vector<uint64_t> events;
    for (const char* e : kMemoryEvents) {
      auto it = m->events.find(e);
      events.push_back(it == m->events.end() ? 0 : it->second);
    }
    event_samples.push_back({top.id, top.stage.name, std::move(events)});
    const PsiTotals mem = ReadPsi(s_.layout, top.path, "memory").value_or(PsiTotals{});
    const PsiTotals io = ReadPsi(s_.layout, top.path, "io").value_or(PsiTotals{});
    pressure_samples.push_back({top.id, top.stage.name,
                                {mem.some_us, mem.full_us.value_or(0), io.some_us,
                                 io.full_us.value_or(0)}});
  }
  events_.Update(event_samples);
  events_.KeepStages(s_.namer->stages()->KnownStageNames());
  pressure_.Update(pressure_samples);
  pressure_.KeepStages(s_.namer->stages()->KnownStageNames());
  const auto event_totals = events_.Totals();
  const auto pressure_totals = pressure_.Totals();
  const auto sampled = s_.sampler->Snapshot();

  auto usage_f = GaugeFamily("stagewatch_memory_usage_bytes",
                             "Memory charged to the stage's cgroups (memory.usage_in_bytes, "
                             "memory.current).");
  auto ws = GaugeFamily("stagewatch_memory_working_set_bytes",
                        "Usage minus inactive file cache: what the stage cannot easily give back.");
  auto limit = GaugeFamily("stagewatch_memory_limit_bytes",
                           "The stage's memory limit; absent when a cgroup of it is unlimited.");
  auto swap = GaugeFamily("stagewatch_memory_swap_bytes", "Swap used by the stage's cgroups.");
  auto peak = GaugeFamily("stagewatch_memory_peak_bytes",
                          "Highest usage of the stage since the agent started: size limits by it.");
  auto near = CounterFamily("stagewatch_memory_near_limit_seconds_total",
                            "Time the stage's usage was at or above memory.near_limit_fraction of "
                            "its limit.");
  auto events = CounterFamily("stagewatch_memory_events_total",
                              "Memory events of the stage's cgroups (memory.events; on cgroup v1 "
                              "failcnt and oom_kill), since the agent saw the cgroup.");
  auto mem_wait = CounterFamily("stagewatch_memory_pressure_waiting_seconds_total",
                                "Time some of the stage's tasks stalled on memory (PSI some).");
  auto mem_stall = CounterFamily("stagewatch_memory_pressure_stalled_seconds_total",
                                 "Time all of the stage's tasks stalled on memory (PSI full).");
  auto io_wait = CounterFamily("stagewatch_io_pressure_waiting_seconds_total",
                               "Time some of the stage's tasks stalled on I/O (PSI some).");
  auto io_stall = CounterFamily("stagewatch_io_pressure_stalled_seconds_total",
                                "Time all of the stage's tasks stalled on I/O (PSI full).");
  for (const Stage& stage : stages) {
    if (auto it = usage.find(stage.name); it != usage.end()) {
      const StageUsage& u = it->second;
      AddGauge(&usage_f, StageLabels(stage), u.usage);
      AddGauge(&ws, StageLabels(stage), u.working_set);
      if (!u.unlimited) AddGauge(&limit, StageLabels(stage), u.limit);
      if (u.has_swap) AddGauge(&swap, StageLabels(stage), u.swap);
    }
    if (auto it = sampled.find(stage.name); it != sampled.end()) {
      AddGauge(&peak, StageLabels(stage), it->second.peak_bytes);
      AddCounter(&near, StageLabels(stage), it->second.near_limit_seconds);
    }
    if (auto it = event_totals.find(stage.name); it != event_totals.end()) {
      for (size_t i = 0; i < kMemoryEvents.size(); i++) {
        AddCounter(&events, StageLabels(stage, {{"event", kMemoryEvents[i]}}), it->second[i]);
      }
    }
    if (auto it = pressure_totals.find(stage.name); it != pressure_totals.end()) {
      const std::vector<uint64_t>& p = it->second;
      AddCounter(&mem_wait, StageLabels(stage), p[0] * 1e-6);
      AddCounter(&mem_stall, StageLabels(stage), p[1] * 1e-6);
      AddCounter(&io_wait, StageLabels(stage), p[2] * 1e-6);
      AddCounter(&io_stall, StageLabels(stage), p[3] * 1e-6);
    }
  }
  for (auto* f : {&usage_f, &ws, &limit, &swap, &peak, &near, &events, &mem_wait, &mem_stall,
                  &io_wait, &io_stall}) {
    out->push_back(std::move(*f));
  }
  return first_error;
}

void MemoryCollector::CollectTasks(const std::vector<Stage>& stages,
                                   std::vector<prometheus::MetricFamily>* out) {
  // Tasks are listed by the cgroup they sit in, not its ancestors: add up every cgroup.
  std::map<std::string, TaskStateCounts> counts;
  for (const NamedCgroup& c : s_.namer->Live()) {
    if (c.stage.name == kUnattributedStage) continue;  // the rest of the host: not ours to list
    absl::StatusOr<TaskStateCounts> t = ReadTaskStates(s_.layout.key_root + c.path);
    if (!t.ok()) continue;
    TaskStateCounts& sum = counts[c.stage.name];
    sum.runnable += t->runnable;
    sum.sleeping += t->sleeping;
    sum.uninterruptible += t->uninterruptible;
    sum.stopped += t->stopped;
    sum.zombie += t->zombie;
  }
  std::map<std::string, SchedStageTotals> sched;
  if (s_.sched) sched = s_.sched->Totals();

  auto tasks = GaugeFamily(
      "stagewatch_tasks",
      "The stage's tasks by state: running (on a CPU now, from the sched probe), runnable "
      "(waiting for a CPU), uninterruptible (D), sleeping, stopped, zombie.");
  for (const Stage& stage : stages) {
    auto it = counts.find(stage.name);
    if (it == counts.end()) continue;
    const TaskStateCounts& t = it->second;
    auto sc = sched.find(stage.name);
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
