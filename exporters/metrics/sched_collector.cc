#include "exporters/metrics/sched_collector.h"

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"
#include "stages/stage_directory.h"

namespace stagewatch::exporters {
namespace {

constexpr double kNs = 1e-9;
// Run-queue latency slots are 2^10 ns wide at the bottom (bpf/histogram.h).
constexpr double kHistUnitSeconds = (1 << HIST_UNIT_SHIFT) * kNs;

}  // namespace

SchedCollector::SchedCollector(const SchedTracker* tracker, StageResolver* stages,
                               MemorySampler* sampler)
    : tracker_(tracker), stages_(stages), sampler_(sampler) {}

absl::Status SchedCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  if (tracker_) CollectKernel(out);
  return CollectSnapshot(stages_->KnownStages(), out);
}

void SchedCollector::CollectKernel(std::vector<prometheus::MetricFamily>* out) {
  const auto totals = tracker_->Totals();
  // Listed after the totals: a stage forgotten meanwhile is left out, not exported as zero.
  const std::vector<Stage> stages = stages_->KnownStages();
  auto switches = CounterFamily("stagewatch_context_switches_total",
                                "Context switches of the stage's tasks: voluntary when the task "
                                "blocked, nonvoluntary when it was still runnable.");
  auto latency = HistogramFamily(
      "stagewatch_runqueue_latency_seconds",
      "Time the stage's tasks waited runnable on a run queue before getting a CPU.");
  auto cpu = CounterFamily("stagewatch_cpu_seconds_total",
                           "CPU time of the stage's tasks, traced at each context switch.");
  auto exited = CounterFamily("stagewatch_processes_exited_total",
                              "Processes of the stage that exited since the agent started.");
  const SchedStageTotals zero;
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.id);
    const SchedStageTotals& t = it == totals.end() ? zero : it->second;
    AddCounter(&switches, StageLabels(stage, {{"ctxswitchtype", "voluntary"}}),
               t.voluntary_switches);
    AddCounter(&switches, StageLabels(stage, {{"ctxswitchtype", "nonvoluntary"}}),
               t.nonvoluntary_switches);
    // The sum is given in slot units too; truncating it loses under one unit in all.
    AddLog2Histogram(&latency, StageLabels(stage), t.runq_slots,
                     t.runq_sum_ns >> HIST_UNIT_SHIFT, kHistUnitSeconds, t.runq_above);
    AddCounter(&cpu, StageLabels(stage), t.oncpu_ns * kNs);
    AddCounter(&exited, StageLabels(stage), t.exited_processes);
  }

  auto preemptions = CounterFamily(
      "stagewatch_cpu_preemptions_total",
      "Times a runnable task of pipeline_stage lost its CPU to a task of preempting_stage.");
  const StageDirectory known(stages);
  for (const auto& [pair, n] : tracker_->Preemptions()) {
    const Stage* preempted = known.Find(pair.first);
    const Stage* preempting = known.Find(pair.second);
    if (!preempted || !preempting) continue;  // forgotten since the totals were read
    AddCounter(&preemptions, StageLabels(*preempted, {{"preempting_stage", preempting->name}}), n);
  }

  auto overflows = CounterFamily(
      "stagewatch_sched_map_overflows_total",
      "Updates the sched probe dropped because a BPF map was full (map=stats|preemptions).");
  const SchedTracker::Overflows dropped = tracker_->overflows();
  AddCounter(&overflows, {{"map", "stats"}}, dropped.stats);
  AddCounter(&overflows, {{"map", "preemptions"}}, dropped.pairs);
  for (auto* f : {&switches, &latency, &cpu, &exited, &preemptions, &overflows}) {
    out->push_back(std::move(*f));
  }
}

absl::Status SchedCollector::CollectSnapshot(const std::vector<Stage>& stages,
                                             std::vector<prometheus::MetricFamily>* out) {
  const std::shared_ptr<const Snapshot> snapshot = sampler_->Latest();
  const auto& totals = snapshot->cpu;

  auto usage = CounterFamily("stagewatch_cgroup_cpu_usage_seconds_total",
                             "CPU time charged to the stage's cgroups by the kernel (cpuacct.usage, "
                             "cpu.stat usage_usec): a cross-check of stagewatch_cpu_seconds_total.");
  auto periods = CounterFamily("stagewatch_cpu_cfs_periods_total",
                               "CFS bandwidth periods elapsed for the stage's cgroups (cpu.stat).");
  auto throttled = CounterFamily("stagewatch_cpu_cfs_throttled_periods_total",
                                 "CFS bandwidth periods in which the stage was throttled.");
  auto throttled_s = CounterFamily("stagewatch_cpu_cfs_throttled_seconds_total",
                                   "Time the stage's cgroups spent throttled by their CPU limit.");
  auto waiting = CounterFamily(
      "stagewatch_pressure_cpu_waiting_seconds_total",
      "Time some of the stage's tasks waited for a CPU (cpu.pressure some).");
  auto stalled = CounterFamily(
      "stagewatch_pressure_cpu_stalled_seconds_total",
      "Time all of the stage's non-idle tasks waited for a CPU (cpu.pressure full).");
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.id);
    if (it == totals.end()) continue;  // `unattributed`, or a stage with no cgroup yet
    const StageCpu& c = it->second;
    AddCounter(&usage, StageLabels(stage), c.usage_ns * kNs);
    AddCounter(&periods, StageLabels(stage), c.periods);
    AddCounter(&throttled, StageLabels(stage), c.throttled_periods);
    AddCounter(&throttled_s, StageLabels(stage), c.throttled_ns * kNs);
    AddCounter(&waiting, StageLabels(stage), c.pressure_some_us * 1e-6);
    AddCounter(&stalled, StageLabels(stage), c.pressure_full_us * 1e-6);
  }
  for (auto* f : {&usage, &periods, &throttled, &throttled_s, &waiting, &stalled}) {
    out->push_back(std::move(*f));
  }
  return snapshot->cpu_error;
}

}  // namespace stagewatch::exporters
