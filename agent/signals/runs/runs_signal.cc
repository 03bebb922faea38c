// runs: each run's cgroup seen born and die, its facts read from the sched and memory probes
// and its OOM kills, recorded in the ledger. Switched by runs.ledger_path opening; it has no
// probe of its own, so it comes after oom, sched and memory.
#include "signals/runs/run_watcher_start.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/runs_collector.h"
#include "signals/lifecycle/lifecycle_probe.h"
#include "signals/modules.h"
#include "signals/snapshot_source.h"

namespace stagewatch {
namespace {

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  r.snapshots = std::make_shared<SnapshotSource>(ctx.sampler);
  r.run_watcher = StartRunWatcher(
      ctx.config, ctx.layout, ctx.stages,
      MakeRunProbeReaders(r.sched_probe.get(), r.memory_probe.get(), ctx.namer),
      r.oom_probe != nullptr, r.cgroup_probe && r.cgroup_probe->populated_events(),
      [snapshots = r.snapshots] { return snapshots->Latest(); });
  if (!r.run_watcher) return nullptr;
  *ctx.runs = r.run_watcher.get();
  return std::make_unique<exporters::RunsCollector>(
      [w = r.run_watcher.get()] { return w->Snapshot(); });
}

}  // namespace

Signal RunsSignal() {
  return {.name = "runs", .start = Start, .adds_collector = true};
}

}  // namespace stagewatch
