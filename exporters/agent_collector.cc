#include "exporters/agent_collector.h"

#include <bpf/libbpf.h>

#include "absl/strings/str_cat.h"
#include "exporters/metric_builders.h"
#include "version.h"

namespace stagewatch::exporters {

absl::Status AgentCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  auto build = GaugeFamily("stagewatch_build_info",
                           "A metric with a constant '1' value labeled by the agent's version.");
  AddGauge(&build,
           {{"version", kVersion},
            {"revision", kRevision},
            {"libbpf_version", absl::StrCat(libbpf_major_version(), ".", libbpf_minor_version())}},
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
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
