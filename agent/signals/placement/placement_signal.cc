// placement: where each stage runs. CPU migrations within and across NUMA nodes from the
// placement probe; on-CPU time by node from the sched probe's per-CPU counts (no second
// program on sched_switch), so that family needs the sched signal on.
#include <bpf/libbpf.h>

#include "cgroup/layout.h"
#include "cgroup/numa_stat.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/placement_collector.h"
#include "log.h"
#include "signals/placement/cpu_nodes.h"
#include "signals/placement/placement_probe.h"
#include "signals/placement/placement_tracker.h"
#include "signals/sched/sched_probe.h"
#include "signals/sched/sched_tracker.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

absl::StatusOr<std::unique_ptr<PlacementProbe>> StartProbe(
    cgroup_key_hierarchy key, const KernelFeatures& features,
    const absl::StatusOr<CpuNodes>& nodes) {
  if (!nodes.ok()) return nodes.status();
  return PlacementProbe::Start({.key = key, .features = features, .cpu_nodes = *nodes});
}

// Whether the cgroups have memory.numa_stat (memory by node, remote share): listed as a probe,
// so that `stagewatch features` and stagewatch_probe_attached say why those series are absent.
ProbeStatus NumaStatStatus(const absl::StatusOr<CgroupLayout>& layout) {
  const absl::Status numa = layout.ok() ? CheckNumaStatAvailable(*layout) : layout.status();
  return {.name = "memory_numa_stat", .attach_type = "cgroupfs", .attached = numa.ok(),
          .error = std::string(numa.message())};
}

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  std::vector<ProbeStatus> statuses =
      StatusesOf(StartProbe(t.key, t.features, ReadCpuNodes(libbpf_num_possible_cpus())));
  statuses.push_back(NumaStatStatus(DetectHostCgroupLayout()));
  return statuses;
}

std::vector<ProbeStatus> NotStarted(const std::string& why) {
  std::vector<ProbeStatus> statuses = PlacementProbe::NotStarted(why);
  statuses.push_back({.name = "memory_numa_stat", .attach_type = "cgroupfs", .error = why});
  return statuses;
}

// The sched tracker's on-CPU time, split by the node of each CPU; the nodes' numbers, or none
// where it cannot be (the sched probe is off or did not start, or the nodes are unknown).
std::vector<uint32_t> SplitOncpuByNode(SchedTracker* sched, const absl::StatusOr<CpuNodes>& nodes) {
  if (sched == nullptr || !nodes.ok()) return {};
  if (absl::Status split = sched->SplitOncpuByCpuGroup(nodes->column_of_cpu); !split.ok()) {
    Log::Warn("on-CPU time is not split by NUMA node", {{"error", split.message()}});
    return {};
  }
  return nodes->nodes;
}

// A run's migrations from the placement probe, and its on-CPU time by node from the sched
// probe's per-CPU copies, looked up for its cgroups at its end (RunProbeReaders).
void ObserveRuns(const PlacementProbe* placement, const SchedProbe* sched,
                 const absl::StatusOr<CpuNodes>& nodes, RunProbeReaders& r) {
  if (placement != nullptr) {
    r.migrations = [placement](const std::set<uint64_t>& ids) {
      std::pair<uint64_t, uint64_t> sum;  // a cgroup without an entry never migrated
      for (uint64_t id : ids) {
        if (std::optional<PlacementCgroupCounts> c = placement->ReadCgroup(id)) {
          sum.first += c->node_migrations;
          sum.second += c->cross_node_migrations;
        }
      }
      return std::optional(sum);
    };
  }
  if (sched == nullptr || !nodes.ok()) return;
  r.cpu_seconds_by_node = [sched, nodes = *nodes](const std::set<uint64_t>& ids) {
    std::map<int, double> by_node;
    for (uint64_t id : ids) {
      std::optional<std::vector<uint64_t>> by_cpu = sched->ReadOncpuByCpu(id);
      if (!by_cpu) continue;
      for (size_t cpu = 0; cpu < by_cpu->size(); cpu++) {
        if ((*by_cpu)[cpu] == 0) continue;
        by_node[nodes.nodes[nodes.ColumnOf(static_cast<int>(cpu))]] += (*by_cpu)[cpu] / 1e9;
      }
    }
    return std::optional(by_node);
  };
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  const absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(libbpf_num_possible_cpus());
  PlacementProbe* probe =
      r.Keep(Adopt(StartProbe(ctx.layout.key, ctx.features, nodes), &r.probe_reports));
  PlacementTracker* tracker = nullptr;
  if (probe != nullptr) {
    tracker = r.Keep(std::make_unique<PlacementTracker>(probe, ctx.namer));
    r.unknown_cgroup_counts.push_back([tracker] { return tracker->unknown_cgroups(); });
    r.sample_hooks.push_back([tracker, due = Cadence(kCollectInterval)](
                                 absl::Time now, const StageDirectory&) mutable {
      if (due.Due(now)) tracker->Collect();
    });
  }
  r.probe_reports.push_back({[numa = NumaStatStatus(ctx.layout)] { return std::vector{numa}; },
                             [] { return std::vector<ProgramStats>(); }});
  ObserveRuns(probe, r.Find<SchedProbe>(), nodes, r.run_readers);
  SchedTracker* sched = r.Find<SchedTracker>();
  const std::vector<uint32_t> split = SplitOncpuByNode(sched, nodes);
  return std::make_unique<exporters::PlacementCollector>(tracker, split.empty() ? nullptr : sched,
                                                         split, ctx.stages, ctx.sampler);
}

// After sched (20), whose tracker splits the on-CPU time by node.
[[maybe_unused]] const bool kRegistered =
    RegisterSignal({.name = "placement",
                    .order = 25,
                    .collector_flag = true,
                    .try_probes = TryProbes,
                    .not_started = NotStarted,
                    .start = Start,
                    .adds_collector = true,
                    .snapshot_parts = kPlacementPart});

}  // namespace
}  // namespace stagewatch
