#include "exporters/metrics/placement_collector.h"

#include <string>

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {

PlacementCollector::PlacementCollector(const PlacementTracker* migrations,
                                       const SchedTracker* oncpu, std::vector<uint32_t> nodes,
                                       StageResolver* stages)
    : migrations_(migrations), oncpu_(oncpu), nodes_(std::move(nodes)), stages_(stages) {}

absl::Status PlacementCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  if (migrations_) CollectMigrations(out);
  if (oncpu_) CollectNodeTime(out);
  return absl::OkStatus();
}

void PlacementCollector::CollectMigrations(std::vector<prometheus::MetricFamily>* out) {
  const auto totals = migrations_->Totals();
  // Listed after the totals: a stage forgotten meanwhile is left out, not exported as zero.
  const std::vector<Stage> stages = stages_->KnownStages();
  auto migrations = CounterFamily(
      "stagewatch_cpu_migrations_total",
      "Times the stage's tasks moved to another CPU: scope=\"node\" within their NUMA node, "
      "\"cross_node\" to another node.");
  const PlacementStageTotals zero;
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.id);
    const PlacementStageTotals& t = it == totals.end() ? zero : it->second;
    AddCounter(&migrations, StageLabels(stage, {{"scope", "node"}}), t.node_migrations);
    AddCounter(&migrations, StageLabels(stage, {{"scope", "cross_node"}}),
               t.cross_node_migrations);
  }
  auto overflows = CounterFamily(
      "stagewatch_placement_map_overflows_total",
      "Migrations the placement probe dropped because its BPF map of cgroups was full.");
  AddCounter(&overflows, {}, migrations_->overflows());
  out->push_back(std::move(migrations));
  out->push_back(std::move(overflows));
}

void PlacementCollector::CollectNodeTime(std::vector<prometheus::MetricFamily>* out) {
  const auto totals = oncpu_->Totals();
  const std::vector<Stage> stages = stages_->KnownStages();
  auto seconds = CounterFamily(
      "stagewatch_cpu_node_seconds_total",
      "CPU time of the stage's tasks on the CPUs of each NUMA node, traced at each context "
      "switch (its sum over nodes is stagewatch_cpu_seconds_total).");
  for (const Stage& stage : stages) {
    auto it = totals.find(stage.id);
    for (size_t group = 0; group < nodes_.size(); group++) {
      const bool counted = it != totals.end() && group < it->second.oncpu_ns_by_cpu_group.size();
      const uint64_t ns = counted ? it->second.oncpu_ns_by_cpu_group[group] : 0;
      AddCounter(&seconds, StageLabels(stage, {{"numa_node", std::to_string(nodes_[group])}}),
                 ns * 1e-9);
    }
  }
  out->push_back(std::move(seconds));
}

}  // namespace stagewatch::exporters
