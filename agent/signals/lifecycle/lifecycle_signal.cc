// cgroup: the cgroup_mkdir/cgroup_rmdir events that name cgroups as they are made, so that no
// walk is needed, and the populated flips that tell the run watcher when a run's last task
// exited. Switched by cgroup.lifecycle_events; it adds no collector of its own.
#include "signals/lifecycle/lifecycle_events.h"
#include "cgroup/layout.h"
#include "cgroup/path_cache.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "log.h"
#include "signals/lifecycle/lifecycle_probe.h"
#include "runs/run_watcher.h"
#include "signals/modules.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(LifecycleProbe::Start(
      {.enabled = t.lifecycle_events, .key = t.key, .features = t.features},
      [](const cgroup_event&) {}, nullptr));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  r.cgroup_probe = Adopt(
      LifecycleProbe::Start({.enabled = ctx.config.cgroup.lifecycle_events, .key = ctx.layout.key,
                          .features = ctx.features},
                         [paths = ctx.paths, runs = ctx.runs](const cgroup_event& e) {
                           if (RunWatcher* w = runs->load()) w->OnCgroupEvent(e);  // first
                           ApplyLifecycleEvent(e, paths);
                         },
                         [paths = ctx.paths, runs = ctx.runs] {
                           Log::Warn("cgroup events lost; walking the hierarchy again", {});
                           paths->Resync();
                           if (RunWatcher* w = runs->load()) w->OnEventsLost();
                         }),
      &r.probe_reports);
  if (!r.cgroup_probe) return nullptr;
  LifecycleProbe* probe = r.cgroup_probe.get();
  ctx.paths->UseEvents([probe] { probe->Drain(); });
  r.pollers.push_back({"lifecycle", probe->ready_fd(), [probe] { return probe->Drain(); }});
  return nullptr;  // no collector of its own
}

}  // namespace

Signal LifecycleSignal() {
  return {.name = "lifecycle",
          .starts_first = true,  // attached before the start walk: no cgroup made meanwhile is missed
          .try_probes = TryProbes,
          .not_started = LifecycleProbe::NotStarted,
          .start = Start};
}

}  // namespace stagewatch
