// lifecycle: the cgroup_mkdir/cgroup_rmdir events that name cgroups as they are made, so that
// no walk is needed, and the populated flips that tell when a run's last task exited. Switched
// by cgroup.lifecycle_events; it adds no collector of its own.
#include "cgroup/layout.h"
#include "cgroup/path_cache.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "log.h"
#include "signals/lifecycle/lifecycle_events.h"
#include "signals/lifecycle/lifecycle_probe.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(LifecycleProbe::Start(
      {.enabled = t.lifecycle_events, .key = t.key, .features = t.features},
      [](const cgroup_event&) {}, nullptr));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  LifecycleProbe* probe = r.Keep(Adopt(
      LifecycleProbe::Start(
          {.enabled = ctx.config.cgroup.lifecycle_events, .key = ctx.layout.key,
           .features = ctx.features},
          [paths = ctx.paths, bus = ctx.bus](const cgroup_event& e) {
            bus->PublishCgroupEvent(e);  // first: an rmdir's probe entries are still there
            ApplyLifecycleEvent(e, paths);
          },
          [paths = ctx.paths, bus = ctx.bus] {
            Log::Warn("cgroup events lost; walking the hierarchy again", {});
            paths->Resync();
            bus->PublishCgroupEventsLost();
          }),
      &r.probe_reports));
  if (probe == nullptr) return nullptr;
  r.observes_populated = probe->populated_events();
  ctx.paths->UseEvents([probe] { probe->Drain(); });
  r.pollers.push_back({"lifecycle", probe->ready_fd(), [probe] { return probe->Drain(); }});
  return nullptr;  // no collector of its own
}

[[maybe_unused]] const bool kRegistered = RegisterSignal({
    .name = "lifecycle",
    .order = 40,           // listed after the probes of the collectors
    .starts_first = true,  // attached before the start walk: no cgroup made meanwhile is missed
    .names_cgroups = true,
    .try_probes = TryProbes,
    .not_started = LifecycleProbe::NotStarted,
    .start = Start});

}  // namespace
}  // namespace stagewatch
