#include "exporters/metrics/oom_collector.h"

#include <limits>
#include <map>

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/stage_labels.h"

namespace stagewatch::exporters {

absl::Status OomCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const std::map<StageId, OomStageTotals> totals = tracker_->Totals();
  const std::shared_ptr<const Snapshot> snapshot = sampler_->Latest();
  const StageMap<uint64_t>& kernel_counts = snapshot->oom_kills;
  // The kernel's counts are as of their reading: a kill traced since is not a mismatch yet.
  const double read_at = snapshot->oom_kills_read == absl::InfinitePast()
                             ? std::numeric_limits<double>::infinity()
                             : absl::ToDoubleSeconds(snapshot->oom_kills_read - absl::UnixEpoch());

  auto kills = CounterFamily("stagewatch_oom_kills_total",
                             "OOM kills of a stage's processes, by who chose the victim.");
  auto last = GaugeFamily("stagewatch_oom_last_kill_timestamp_seconds",
                          "Unix time of the stage's last OOM kill; 0 if none since start.");
  auto cgroup_kills = CounterFamily(
      "stagewatch_oom_kills_cgroup_total",
      "The kernel's own oom_kill count (memory.oom_control, memory.events.local) summed over "
      "the stage's cgroups, since the agent started.");
  auto mismatch = GaugeFamily(
      "stagewatch_oom_kills_mismatch",
      "Kernel OOM kills counted by cgroupfs minus those traced; non-zero means lost or "
      "unattributed events.");

  // Every known stage is exported, zero included, so rate() works from the first kill.
  for (const Stage& stage : stages_->KnownStages()) {
    const auto t = totals.find(stage.id);
    const OomStageTotals seen = t == totals.end() ? OomStageTotals{} : t->second;
    const auto k = kernel_counts.find(stage.id);
    const uint64_t kernel = k == kernel_counts.end() ? 0 : k->second;

    AddCounter(&kills, StageLabels(stage, {{"kind", "kernel"}}), seen.kernel_kills);
    AddCounter(&kills, StageLabels(stage, {{"kind", "userspace"}}), seen.userspace_kills);
    AddGauge(&last, StageLabels(stage), seen.last_kill_unix_seconds);
    AddCounter(&cgroup_kills, StageLabels(stage), kernel);
    AddGauge(&mismatch, StageLabels(stage),
             static_cast<double>(kernel) - static_cast<double>(seen.KernelKillsBy(read_at)));
  }
  for (auto* family : {&kills, &last, &cgroup_kills, &mismatch}) out->push_back(std::move(*family));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
