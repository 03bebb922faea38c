// runs: each run's cgroup seen born and die, its facts read from the probes that observe them
// (RunningSignals::run_readers) and its OOM kills, recorded in the ledger. Switched by
// runs.ledger_path opening; it has no probe of its own, so it comes after the signals it reads.
#include "anomaly/anomaly_engine.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/runs_collector.h"
#include "log.h"
#include "runs/run_watcher.h"
#include "signals/signal.h"
#include "signals/snapshot_source.h"

namespace stagewatch {
namespace {

RunWatcherOptions Options(const SignalContext& ctx) {
  const Config& config = ctx.config;
  RunWatcherOptions options{.key_root = ctx.layout.key_root,
                            .layout = ctx.layout,
                            .populated_events = ctx.running->observes_populated,
                            .runs = config.runs,
                            .oom_observed = ctx.running->observes_oom_kills,
                            .pipelines = config.pipelines};
  if (AnomalyEngine* engine = ctx.anomalies) {
    options.detectors = {
        .expect = [engine](uint64_t id, const RunExpectation& e) { engine->ExpectRun(id, e); },
        .forget = [engine](uint64_t id) { engine->ForgetRun(id); },
        .pace = [engine](const Stage& stage, absl::Time t, uint64_t id,
                         const DetectorState& state) { engine->OnRunPace(stage, t, id, state); },
        .slow_run = config.anomalies.slow_run};
  }
  if (config.runs.sample_reads_per_second > 0) {
    // Discovered runs that are limit domains take their memory from the sampler's snapshot.
    options.sampling = DiscoveredSamplerOptions{
        .layout = ctx.layout,
        .interval = config.memory.sample_interval,
        .near_limit_fraction = config.memory.near_limit_fraction,
        .reads_per_second = config.runs.sample_reads_per_second,
        .latest_snapshot = [snapshots = ctx.snapshots] { return snapshots->Latest(); }};
  }
  return options;
}

// A ledger that cannot be opened (no StateDirectory, a read-only disk, a file that is not a
// ledger) is a warning: the agent runs on without runs.
RunWatcher* StartWatcher(const SignalContext& ctx) {
  const std::string& path = ctx.config.runs.ledger_path;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path, ctx.config.runs);
  if (!ledger.ok()) {
    Log::Warn("not recording runs: cannot open the run ledger; give a writable --ledger.path "
              "(the systemd unit's StateDirectory=stagewatch makes the default one)",
              {{"ledger", path}, {"err", ledger.status().message()}});
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<RunWatcher>> watcher = RunWatcher::Start(
      *std::move(ledger), ctx.stages, Options(ctx), ctx.running->run_readers);
  if (!watcher.ok()) {
    Log::Warn("not recording runs", {{"ledger", path}, {"err", watcher.status().message()}});
    return nullptr;
  }
  return ctx.running->Keep(*std::move(watcher));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunWatcher* w = StartWatcher(ctx);
  if (w == nullptr) return nullptr;
  ctx.bus->Subscribe({
      .cgroup_event = [w](const cgroup_event& e) { w->OnCgroupEvent(e); },
      .cgroup_events_lost = [w] { w->OnEventsLost(); },
      .oom_kill = [w](const OomKill& k) { w->OnOomKill(k.victim_cgroup_id, k.victim); },
      .anomaly =
          [w](const AnomalyChange& c) {
            if (c.active) w->OnAnomaly(c.stage.name, {AnomalyRuleName(c.rule), c.at, c.summary});
          },
  });
  return std::make_unique<exporters::RunsCollector>([w] { return w->Snapshot(); });
}

[[maybe_unused]] const bool kRegistered =
    RegisterSignal({.name = "runs", .order = 90, .start = Start, .adds_collector = true});

}  // namespace
}  // namespace stagewatch
