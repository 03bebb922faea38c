// oom: the kernel's and user-space killers' OOM kills, attributed to stages and runs.
#include <cstring>

#include "absl/time/clock.h"
#include "anomaly/anomaly_engine.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/oom_collector.h"
#include "sampler/memory_sampler.h"
#include "signals/oom/oom_probe.h"
#include "signals/oom/oom_tracker.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

// The victim of an OOM kill event, as a run's row keeps it.
OomVictim VictimOf(const oom_event& e) {
  const bool userspace = e.kind == OOM_KIND_USERSPACE;
  return {.pid = e.victim_pid,
          .comm = std::string(e.victim_comm, strnlen(e.victim_comm, OOM_COMM_LEN)),
          .kind = userspace ? "userspace" : "kernel",
          .killer = userspace ? std::string(e.trigger_comm, strnlen(e.trigger_comm, OOM_COMM_LEN))
                              : ""};
}

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  return StatusesOf(
      OomProbe::Start({.key = t.key, .features = t.features}, [](const oom_event&) {}));
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  const OomConfig& oom = ctx.config.oom;
  OomTracker* tracker =
      r.Keep(std::make_unique<OomTracker>(ctx.paths, ctx.stages, ctx.layout.key));
  r.unknown_cgroup_counts.push_back([tracker] { return tracker->unknown_cgroups(); });
  // Forgotten stages' totals go on the sampler's clock, so that a scrape only reads.
  r.sample_hooks.push_back([tracker, stages = ctx.stages](absl::Time, const StageDirectory&) {
    tracker->KeepStages(*stages->KnownStageIds());
  });
  // The kernel's own counts are the sampler's (kOomPart). Kills the kernel counted before the
  // agent started are the baseline, not news: read before the probe attaches (the sampler's
  // thread has not started yet). Each traced kill has it read the victim's count at once, and
  // every cgroup's over the next few samples.
  ctx.sampler->ReadOomBaseline(absl::Now());
  OomProbe* probe = r.Keep(Adopt(
      OomProbe::Start({.key = ctx.layout.key, .userspace_killers = oom.userspace_killers,
                       .userspace_killer_paths = oom.userspace_killer_paths,
                       .userspace_killer_max_uid = oom.userspace_killer_max_uid,
                       .features = ctx.features},
                      [tracker, anomalies = ctx.anomalies, sampler = ctx.sampler,
                       bus = ctx.bus](const oom_event& e) {
                        auto [stage, summary] = tracker->OnEvent(e);
                        const absl::Time now = absl::Now();
                        // The anomaly first: the sampler's read of the victim's count, on
                        // its own thread, must not show the kill to a scrape before it.
                        anomalies->OnOomKill(stage, now, summary);
                        sampler->OnOomKill(now, e.flags & OOM_FLAG_VICTIM_CGROUP_UNKNOWN
                                                    ? 0
                                                    : e.victim_cgroup_id);
                        bus->PublishOomKill({e.victim_cgroup_id, VictimOf(e)});
                      }),
      &r.probe_reports));
  if (probe != nullptr) {
    r.observes_oom_kills = true;
    r.pollers.push_back({"oom", probe->ready_fd(), [probe] { return probe->Consume(); }});
    if (probe->traces_kernel_kills()) {
      ctx.sampler->OnOomKillsTraced([probe] { return probe->kernel_kills_dropped(); });
    }
  }
  return std::make_unique<exporters::OomCollector>(tracker, ctx.stages, ctx.sampler);
}

[[maybe_unused]] const bool kRegistered = RegisterSignal({.name = "oom",
                                                          .order = 10,
                                                          .collector_flag = true,
                                                          .try_probes = TryProbes,
                                                          .not_started = OomProbe::NotStarted,
                                                          .start = Start,
                                                          .adds_collector = true,
                                                          .snapshot_parts = kOomPart});

}  // namespace
}  // namespace stagewatch
