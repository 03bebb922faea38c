// oom: the kernel's and user-space killers' OOM kills, attributed to stages and runs.
#include "absl/time/clock.h"
#include "anomaly/anomaly_engine.h"
#include "signals/runs/run_watcher_start.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/oom_collector.h"
#include "sampler/memory_sampler.h"
#include "signals/oom/oom_tracker.h"
#include "signals/oom/oom_probe.h"
#include "signals/modules.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(
      OomProbe::Start({.key = t.key, .features = t.features}, [](const oom_event&) {}));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  const OomConfig& oom = ctx.config.oom;
  // The kernel's own counts are the sampler's (kOomPart). Kills the kernel counted before the
  // agent started are the baseline, not news: read before the probe attaches (the sampler's
  // thread has not started yet). Each traced kill has it read the victim's count at once, and
  // every cgroup's over the next few samples.
  ctx.sampler->ReadOomBaseline(absl::Now());
  r.oom_probe = Adopt(
      OomProbe::Start({.key = ctx.layout.key, .userspace_killers = oom.userspace_killers,
                       .userspace_killer_paths = oom.userspace_killer_paths,
                       .userspace_killer_max_uid = oom.userspace_killer_max_uid,
                       .features = ctx.features},
                      [tracker = ctx.oom, anomalies = ctx.anomalies, sampler = ctx.sampler,
                       runs = ctx.runs](const oom_event& e) {
                        auto [stage, summary] = tracker->OnEvent(e);
                        const absl::Time now = absl::Now();
                        sampler->OnOomKill(now, e.flags & OOM_FLAG_VICTIM_CGROUP_UNKNOWN
                                                    ? 0
                                                    : e.victim_cgroup_id);
                        anomalies->OnOomKill(stage, now, summary);
                        if (RunWatcher* w = runs->load()) {
                          w->OnOomKill(e.victim_cgroup_id, OomVictimOf(e));
                        }
                      }),
      &r.probe_reports);
  if (OomProbe* probe = r.oom_probe.get()) {
    r.pollers.push_back({"oom", probe->ready_fd(), [probe] { return probe->Consume(); }});
  }
  return std::make_unique<exporters::OomCollector>(ctx.oom, ctx.stages, ctx.sampler);
}

}  // namespace

Signal OomSignal() {
  return {.name = "oom",
          .collector_flag = true,
          .try_probes = TryProbes,
          .not_started = OomProbe::NotStarted,
          .start = Start,
          .adds_collector = true,
          .snapshot_parts = kOomPart};
}

}  // namespace stagewatch
