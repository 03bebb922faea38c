#include "exporters/metrics/placement_collector.h"

#include <string>

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {

PlacementCollector::PlacementCollector(const PlacementTracker* migrations,
                                       const SchedTracker* oncpu, std::vector<uint32_t> nodes,
                                       StageResolver* stages, const MemorySampler* sampler)
    : migrations_(migrations),
      oncpu_(oncpu),
      nodes_(std::move(nodes)),
      stages_(stages),
      sampler_(sampler) {}

absl::Status PlacementCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  if (migrations_) CollectMigrations(out);
  std::map<StageId, SchedStageTotals> totals;
  if (oncpu_) {
    totals = oncpu_->Totals();
    CollectNodeTime(totals, out);
  }
  const std::shared_ptr<const Snapshot> snapshot = sampler_ ? sampler_->Latest() : nullptr;
  if (snapshot == nullptr) return absl::OkStatus();
  const StageNodeCpuSeconds cpu = RecentCpuByNode(totals, absl::Now());
  AppendPlacementMemorySeries(*snapshot, stages_->KnownStages(), oncpu_ ? &cpu : nullptr, out);
  // A kernel without memory.numa_stat (no CONFIG_NUMA) is told by `stagewatch features`, not
  // by a failed collector at every scrape.
  if (absl::IsNotFound(snapshot->placement_error)) return absl::OkStatus();
  return snapshot->placement_error;
}

StageNodeCpuSeconds PlacementCollector::RecentCpuByNode(
    const std::map<StageId, SchedStageTotals>& totals, absl::Time now) {
  StageNodeCpuSeconds out;
  absl::flat_hash_map<StageId, CpuWindow> kept;  // a forgotten stage's window goes
  for (const auto& [stage, t] : totals) {
    const std::vector<uint64_t>& ns = t.oncpu_ns_by_cpu_group;
    auto found = windows_.find(stage);
    // A stage first seen starts its window at zero: the tracker counts it from the agent's
    // start, so its first window is all its CPU time so far.
    CpuWindow w = found == windows_.end() ? CpuWindow{now, {}, {}} : std::move(found->second);
    std::vector<double> since;  // by node number
    double since_total = 0;
    for (size_t group = 0; group < ns.size() && group < nodes_.size(); group++) {
      const uint64_t start = group < w.start_ns.size() ? w.start_ns[group] : 0;
      const double seconds = ns[group] > start ? (ns[group] - start) * 1e-9 : 0;
      if (since.size() <= nodes_[group]) since.resize(nodes_[group] + 1, 0);
      since[nodes_[group]] = seconds;
      since_total += seconds;
    }
    if (now - w.start >= kRemoteWindow) {
      if (since_total > 0) w.last_seconds = since;
      w.start = now;
      w.start_ns = ns;
    }
    if (!w.last_seconds.empty()) {
      out[stage] = w.last_seconds;
    } else if (since_total > 0) {
      out[stage] = std::move(since);
    }
    kept[stage] = std::move(w);
  }
  windows_ = std::move(kept);
  return out;
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

void PlacementCollector::CollectNodeTime(const std::map<StageId, SchedStageTotals>& totals,
                                         std::vector<prometheus::MetricFamily>* out) {
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
