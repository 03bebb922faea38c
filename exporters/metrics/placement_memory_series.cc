#include "exporters/metrics/placement_memory_series.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "cgroup/cpu_list.h"
#include "cgroup/remote_memory_share.h"
#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {
namespace {

size_t SharedCount(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both.size();
}

// The CPUs the pinned stages share with one another: for each, the other pinned stages whose
// CPUs overlap its own, most shared first (then by name), up to kMaxSharedStagesPerStage.
// A stage that may use every CPU of the host is not pinned: it shares with everything, which
// says nothing.
void AddSharedCpus(const Snapshot& snapshot, const std::vector<Stage>& stages,
                   prometheus::MetricFamily* shared) {
  if (!snapshot.numa_topology) return;  // what "every CPU" is is unknown
  const std::vector<int>& host = snapshot.numa_topology->online_cpus;
  std::vector<std::pair<const Stage*, const std::vector<int>*>> pinned;
  for (const Stage& stage : stages) {
    auto p = snapshot.placement.find(stage.id);
    if (p == snapshot.placement.end() || !p->second->cpus) continue;
    const std::vector<int>& cpus = *p->second->cpus;
    if (!cpus.empty() && !std::includes(cpus.begin(), cpus.end(), host.begin(), host.end())) {
      pinned.emplace_back(&stage, &cpus);
    }
  }
  for (const auto& [stage, cpus] : pinned) {
    std::vector<std::pair<size_t, const Stage*>> others;
    for (const auto& [other, other_cpus] : pinned) {
      if (other == stage) continue;
      if (const size_t n = SharedCount(*cpus, *other_cpus); n > 0) others.emplace_back(n, other);
    }
    std::sort(others.begin(), others.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second->name < b.second->name;
    });
    if (others.size() > kMaxSharedStagesPerStage) others.resize(kMaxSharedStagesPerStage);
    for (const auto& [n, other] : others) {
      Labels extra{{"other_stage", other->name}};
      if (!other->pipeline.empty()) extra.emplace_back("other_pipeline", other->pipeline);
      AddGauge(shared, StageLabels(*stage, std::move(extra)), double(n));
    }
  }
}

}  // namespace

void AppendPlacementMemorySeries(const Snapshot& snapshot, const std::vector<Stage>& stages,
                                 const StageNodeCpuSeconds* cpu_seconds,
                                 std::vector<prometheus::MetricFamily>* out) {
  auto numa = GaugeFamily("stagewatch_memory_numa_bytes",
                          "Memory of the stage's cgroups on each NUMA node, anonymous or file "
                          "cache (memory.numa_stat); absent where the kernel has no NUMA.");
  auto remote = GaugeFamily("stagewatch_memory_remote_ratio",
                            "Part of the stage's memory on nodes other than those its CPU time "
                            "ran on, weighted by that CPU time: 0 all local, 1 all remote.");
  auto cpus = GaugeFamily("stagewatch_cpuset_cpus",
                          "CPUs the stage's tasks may run on (its effective cpuset).");
  auto info = GaugeFamily("stagewatch_cpuset_info",
                          "The stage's effective cpuset: its CPUs and memory nodes as lists.");
  auto shared = GaugeFamily(
      "stagewatch_cpuset_shared_cpus",
      "CPUs a pinned stage shares with another pinned stage (both on fewer CPUs than the "
      "host's); absent for stages that share none.");
  for (const Stage& stage : stages) {
    auto p = snapshot.placement.find(stage.id);
    if (p == snapshot.placement.end()) continue;
    const StagePlacement& placement = *p->second;
    if (placement.numa) {
      for (const auto& [node, m] : *placement.numa) {
        const std::string id = std::to_string(node);
        AddGauge(&numa, StageLabels(stage, {{"numa_node", id}, {"type", "anon"}}), m.anon_bytes);
        AddGauge(&numa, StageLabels(stage, {{"numa_node", id}, {"type", "file"}}), m.file_bytes);
      }
      if (cpu_seconds != nullptr) {
        auto s = cpu_seconds->find(stage.id);
        if (s != cpu_seconds->end()) {
          if (std::optional<double> r = RemoteMemoryShare(*placement.numa, s->second)) {
            AddGauge(&remote, StageLabels(stage), *r);
          }
        }
      }
    }
    if (placement.cpus && placement.mems) {
      AddGauge(&cpus, StageLabels(stage), double(placement.cpus->size()));
      AddGauge(&info,
               StageLabels(stage, {{"cpus", FormatCpuList(*placement.cpus)},
                                   {"mems", FormatCpuList(*placement.mems)}}),
               1);
    }
  }
  AddSharedCpus(snapshot, stages, &shared);
  for (auto* f : {&numa, &remote, &cpus, &info, &shared}) out->push_back(std::move(*f));
}

}  // namespace stagewatch::exporters
