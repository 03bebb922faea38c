#include "exporters/sched_collector.h"

#include "exporters/metric_builders.h"
#include "exporters/stage_labels.h"

namespace stagewatch::exporters {
namespace {

constexpr double kNs = 1e-9;
// Run-queue latency slots are 2^10 ns wide at the bottom (bpf/histogram.h).
constexpr double kHistUnitSeconds = (1 << HIST_UNIT_SHIFT) * kNs;

}  // namespace

SchedCollector::SchedCollector(SchedTracker* tracker, SchedProbe* probe, CgroupNamer* namer,
                               CgroupLayout layout)
    : tracker_(tracker), probe_(probe), namer_(namer), layout_(std::move(layout)),
      cgroupfs_(6) {}

absl::Status SchedCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const std::vector<Stage> stages = namer_->stages()->KnownStages();
  if (probe_) CollectKernel(stages, out);
  return CollectCgroupfs(stages, out);
}

void SchedCollector::CollectKernel(const std::vector<Stage>& stages,
                                   std::vector<prometheus::MetricFamily>* out) {
  tracker_->Collect();
  const auto totals = tracker_->Totals();
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
    auto it = totals.find(stage.name);
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
  std::map<std::string, Stage> by_name;
  for (const Stage& s : stages) by_name[s.name] = s;
  for (const auto& [pair, n] : tracker_->Preemptions()) {
    const Stage& preempted = by_name[pair.first];
    AddCounter(&preemptions,
               StageLabels(preempted.name.empty() ? Stage{pair.first, ""} : preempted,
                           {{"preempting_stage", pair.second}}),
               n);
  }

  auto overflows = CounterFamily(
      "stagewatch_sched_map_overflows_total",
      "Updates the sched probe dropped because a BPF map was full (map=stats|preemptions).");
  AddCounter(&overflows, {{"map", "stats"}}, probe_->stats_overflows());
  AddCounter(&overflows, {{"map", "preemptions"}}, probe_->pair_overflows());
  for (auto* f : {&switches, &latency, &cpu, &exited, &preemptions, &overflows}) {
    out->push_back(std::move(*f));
  }
}

absl::Status SchedCollector::CollectCgroupfs(const std::vector<Stage>& stages,
                                             std::vector<prometheus::MetricFamily>* out) {
  (void)stages;
  (void)out;
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
