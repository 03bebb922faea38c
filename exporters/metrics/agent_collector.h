// The agent's own health: build, probes, lost events, cgroup naming, the HTTP endpoint's
// basic auth. Always on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cgroup/path_cache.h"
#include "exporters/metrics/auth_gate_stats.h"
#include "exporters/metrics/collector.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

struct AgentHealthSources {
  std::function<std::vector<ProbeStatus>()> probes;
  std::function<std::vector<ProgramStats>()> programs;  // every loaded BPF program
  std::function<uint64_t()> unknown_cgroup_events;  // events attributed to `unattributed`
  CgroupPathCache* path_cache = nullptr;
  StageResolver* stages = nullptr;
  std::function<AuthGateStats()> http_auth;  // the HTTP endpoint's basic auth
  // Where users reach this agent (--web.external-url, else its bound address), without a
  // trailing slash: dashboards link to <external_url>/runs/<id> from a fleet-wide query.
  std::string external_url;
};

class AgentCollector : public Collector {
 public:
  explicit AgentCollector(AgentHealthSources sources) : sources_(std::move(sources)) {}
  std::string_view name() const override { return "agent"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  AgentHealthSources sources_;
};

}  // namespace stagewatch::exporters
