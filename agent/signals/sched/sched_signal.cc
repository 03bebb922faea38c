// sched: run-queue latency and preemptions from the sched probe; throttling, CPU usage and
// pressure from cgroupfs.
#include "cgroup/layout.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/sched_collector.h"
#include "signals/sched/sched_probe.h"
#include "signals/sched/sched_tracker.h"
#include "signals/modules.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(SchedProbe::Start({.key = t.key, .features = t.features}));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  r.sched_probe = Adopt(SchedProbe::Start({.key = ctx.layout.key, .features = ctx.features}),
                        &r.probe_reports);
  if (r.sched_probe) r.sched = std::make_unique<SchedTracker>(r.sched_probe.get(), ctx.namer);
  // Without the probe, the snapshot's half (throttling, usage, PSI) still runs.
  return std::make_unique<exporters::SchedCollector>(
      r.sched.get(), r.sched_probe.get(), ctx.stages, ctx.sampler);
}

}  // namespace

Signal SchedSignal() {
  return {.name = "sched",
          .collector_flag = true,
          .try_probes = TryProbes,
          .not_started = SchedProbe::NotStarted,
          .start = Start,
          .adds_collector = true,
          .snapshot_parts = kCpuPart};
}

}  // namespace stagewatch
