#include "exporters/metrics/agent_collector.h"

#include <bpf/libbpf.h>

#include "absl/strings/str_cat.h"
#include "exporters/metrics/metric_builders.h"
#include "version.h"

namespace stagewatch::exporters {

absl::Status AgentCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  auto build = GaugeFamily("stagewatch_build_info",
                           "A metric with a constant '1' value labeled by the agent's version "
                           "and the URL it is reached at (--web.external-url).");
  AddGauge(&build,
           {{"version", kVersion},
            {"revision", kRevision},
            {"libbpf_version", absl::StrCat(libbpf_major_version(), ".", libbpf_minor_version())},
            {"external_url", sources_.external_url}},
           1);
  out->push_back(std::move(build));

  auto attached = GaugeFamily("stagewatch_probe_attached",
                              "Whether a probe's BPF program is attached (1) or not (0).");
  auto lost = CounterFamily("stagewatch_probe_lost_events_total",
                            "Events a probe dropped because its ring buffer was full.");
  for (const ProbeStatus& p : sources_.probes()) {
    AddGauge(&attached, {{"probe", p.name}, {"attach_type", p.attach_type}}, p.attached ? 1 : 0);
    AddCounter(&lost, {{"probe", p.name}}, p.lost_events);
  }
  out->push_back(std::move(attached));
  out->push_back(std::move(lost));

  auto stats_on = GaugeFamily(
      "stagewatch_bpf_stats_enabled",
      "Whether the kernel counts BPF program run time (sysctl kernel.bpf_stats_enabled=1, "
      "or the agent's --bpf.stats).");
  AddGauge(&stats_on, {}, BpfStatsEnabled() ? 1 : 0);
  auto run_time = CounterFamily(
      "stagewatch_bpf_program_run_seconds_total",
      "Time the kernel spent in each of the agent's BPF programs, while bpf_stats_enabled is on.");
  auto runs = CounterFamily("stagewatch_bpf_program_runs_total",
                            "Runs of each of the agent's BPF programs, while bpf_stats_enabled "
                            "is on.");
  for (const ProgramStats& p : sources_.programs()) {
    AddCounter(&run_time, {{"program", p.program}}, p.run_time_ns * 1e-9);
    AddCounter(&runs, {{"program", p.program}}, p.run_count);
  }
  for (auto* f : {&stats_on, &run_time, &runs}) out->push_back(std::move(*f));

  auto unknown = CounterFamily(
      "stagewatch_unknown_cgroup_events_total",
      "Events whose cgroup could not be named (gone before it was looked up); they count "
      "under pipeline_stage=\"unattributed\".");
  AddCounter(&unknown, {}, sources_.unknown_cgroup_events());
  out->push_back(std::move(unknown));

  const CgroupPathCacheStats cache = sources_.path_cache->stats();
  auto rescans = CounterFamily("stagewatch_cgroup_cache_rescans_total",
                               "Walks of the cgroup hierarchy to name new cgroup ids.");
  AddCounter(&rescans, {}, cache.rescans);
  out->push_back(std::move(rescans));
  auto truncated = GaugeFamily(
      "stagewatch_cgroup_cache_truncated",
      "Cgroups left out of the id cache at the last walk because it is full "
      "(cgroup.cache_max_entries).");
  AddGauge(&truncated, {}, cache.truncated);
  out->push_back(std::move(truncated));

  auto overflow = CounterFamily(
      "stagewatch_stage_discovery_overflows_total",
      "Cgroups named by the stagewatch/<stage> convention beyond discovery.max_stages, "
      "counted under pipeline_stage=\"unattributed\".");
  AddCounter(&overflow, {}, sources_.stages->discovery_overflows());
  out->push_back(std::move(overflow));

  const AuthGateStats auth = sources_.http_auth ? sources_.http_auth() : AuthGateStats{};
  auto checks = CounterFamily(
      "stagewatch_http_basic_auth_checks_total",
      "Basic auth credentials checked against their bcrypt hash; a credential checked once is "
      "remembered and not checked again.");
  AddCounter(&checks, {{"result", "accepted"}}, auth.checks_accepted);
  AddCounter(&checks, {{"result", "refused"}}, auth.checks_refused);
  out->push_back(std::move(checks));
  auto throttled = CounterFamily(
      "stagewatch_http_throttled_requests_total",
      "Requests answered 429: their address had no failed logins left, or the queue of "
      "credentials to check was full.");
  AddCounter(&throttled, {{"reason", "failed_logins"}}, auth.throttled_failures);
  AddCounter(&throttled, {{"reason", "busy"}}, auth.throttled_busy);
  out->push_back(std::move(throttled));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
