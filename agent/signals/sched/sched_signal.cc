// sched: run-queue latency and preemptions from the sched probe; throttling, CPU usage and
// pressure from cgroupfs.
#include "anomaly/anomaly_engine.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/sched_collector.h"
#include "signals/sched/preemption_reads.h"
#include "signals/sched/sched_probe.h"
#include "signals/sched/sched_tracker.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(SchedProbe::Start({.key = t.key, .features = t.features}));
}

// Seconds of one of the sched probe's nanosecond figures, summed over a run's cgroups.
std::function<std::optional<double>(const std::set<uint64_t>&)> SchedSeconds(
    const SchedProbe* sched, uint64_t (*figure)(const sched_cgroup_stats&)) {
  // Its cgroups looked up one by one, not the whole map read for each run that ends.
  return [sched, figure](const std::set<uint64_t>& ids) -> std::optional<double> {
    uint64_t ns = 0;
    for (uint64_t id : ids) {
      if (std::optional<sched_cgroup_stats> stats = sched->ReadCgroup(id)) ns += figure(*stats);
    }
    return ns / 1e9;
  };
}

// A run's run-queue wait (and its throttled part) and its preemptors, from the probe's maps.
void ObserveRuns(const SchedProbe* sched, CgroupNamer* namer, RunProbeReaders& r) {
  r.run_queue_wait_seconds = SchedSeconds(
      sched, [](const sched_cgroup_stats& s) -> uint64_t { return s.runq_latency.sum; });
  if (sched->splits_throttled_wait()) {
    r.run_queue_throttled_seconds = SchedSeconds(
        sched, [](const sched_cgroup_stats& s) -> uint64_t { return s.runq_throttled_ns; });
  }
  r.preemptions = [reads = std::make_shared<PreemptionReads>(sched)](
                      const std::set<uint64_t>& ids,
                      uint64_t settled_ns) -> std::optional<std::map<uint64_t, uint64_t>> {
    return reads->Of(ids, settled_ns);
  };
  r.stage_of = [namer](uint64_t id) {
    if (std::optional<Stage> stage = namer->StageOf(id)) return stage->name;
    // A preemptor born since the namer's last refresh (a run that ends soon after another
    // stage's run started), or dead for longer than the namer keeps it: named from the path
    // cache now, without discovering its stage again if it was forgotten.
    if (std::optional<std::string> now = namer->StageNameNow(id)) return *now;
    return std::string(kUnattributedStage);
  };
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  SchedProbe* probe = r.Keep(Adopt(
      SchedProbe::Start({.key = ctx.layout.key, .features = ctx.features}), &r.probe_reports));
  SchedTracker* tracker = nullptr;
  if (probe != nullptr) {
    tracker = r.Keep(std::make_unique<SchedTracker>(probe, ctx.namer));
    r.unknown_cgroup_counts.push_back([tracker] { return tracker->unknown_cgroups(); });
    ObserveRuns(probe, ctx.namer, r.run_readers);
    // A stage top none of whose tasks ran needs no file read off its round (memory_sampler.h).
    if (ctx.sampler) ctx.sampler->OnTasksRanTraced([probe] { return probe->TakeCgroupsThatRan(); });
    r.sample_hooks.push_back([tracker, engine = ctx.anomalies, due = Cadence(kCollectInterval)](
                                 absl::Time now, const StageDirectory& known) mutable {
      // Early while a churn takes slots: the dead give theirs back only at a collection.
      if (!due.Due(now) && !tracker->SlotsFillingFast()) return;
      tracker->Collect();
      for (const auto& [id, t] : tracker->Totals()) {
        const Stage* stage = known.Find(id);
        if (stage && id != kUnattributedStageId) {
          RunqWaits waits{.slots = t.runq_slots, .sum_ns = t.runq_sum_ns,
                          .first_waits = t.first_waits, .first_wait_ns = t.first_wait_ns};
          waits.slots.push_back(t.runq_above);
          engine->OnRunqLatency(*stage, now, std::move(waits));
        }
      }
    });
  }
  // Without the probe, the snapshot's half (throttling, usage, PSI) still runs.
  return std::make_unique<exporters::SchedCollector>(tracker, ctx.stages, ctx.sampler);
}

[[maybe_unused]] const bool kRegistered = RegisterSignal({.name = "sched",
                                                          .order = 20,
                                                          .collector_flag = true,
                                                          .try_probes = TryProbes,
                                                          .not_started = SchedProbe::NotStarted,
                                                          .start = Start,
                                                          .adds_collector = true,
                                                          .snapshot_parts = kCpuPart});

}  // namespace
}  // namespace stagewatch
