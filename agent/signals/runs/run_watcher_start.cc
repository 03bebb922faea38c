#include "signals/runs/run_watcher_start.h"

#include <cstring>

#include "log.h"

namespace stagewatch {
namespace {

// Seconds of one of the sched probe's nanosecond figures, summed over a run's cgroups.
std::function<std::optional<double>(const std::set<uint64_t>&)> SchedSeconds(
    const SchedProbe* sched, uint64_t (*figure)(const sched_cgroup_stats&)) {
  return [sched, figure](const std::set<uint64_t>& ids) -> std::optional<double> {
    uint64_t ns = 0;
    for (const auto& [id, stats] : sched->ReadCgroups()) {
      if (ids.count(id)) ns += figure(stats);
    }
    return ns / 1e9;
  };
}

}  // namespace

RunProbeReaders MakeRunProbeReaders(const SchedProbe* sched, const MemoryProbe* memory,
                                    CgroupNamer* namer) {
  RunProbeReaders r;
  if (sched) {
    r.run_queue_wait_seconds = SchedSeconds(
        sched, [](const sched_cgroup_stats& s) -> uint64_t { return s.runq_latency.sum; });
    if (sched->splits_throttled_wait()) {
      r.run_queue_throttled_seconds = SchedSeconds(
          sched, [](const sched_cgroup_stats& s) -> uint64_t { return s.runq_throttled_ns; });
    }
    r.preemptions = [sched](const std::set<uint64_t>& ids)
        -> std::optional<std::map<uint64_t, uint64_t>> {
      std::map<uint64_t, uint64_t> by_preempting;
      for (const auto& [pair, n] : sched->ReadPreemptions()) {
        if (ids.count(pair.first)) by_preempting[pair.second] += n;
      }
      return by_preempting;
    };
    r.stage_of = [namer](uint64_t id) {
      std::optional<Stage> stage = namer->StageOf(id);
      return stage ? stage->name : std::string(kUnattributedStage);
    };
  }
  if (memory) {
    r.reclaim_stall_seconds = [memory](const std::set<uint64_t>& ids) -> std::optional<double> {
      uint64_t ns = 0;
      for (const MemoryCgroupCounters& c : memory->Read()) {
        if (ids.count(c.cgroup_id)) ns += c.reclaim_stall_ns.sum;
      }
      return ns / 1e9;
    };
  }
  return r;
}

OomVictim OomVictimOf(const oom_event& e) {
  const bool userspace = e.kind == OOM_KIND_USERSPACE;
  return {.pid = e.victim_pid,
          .comm = std::string(e.victim_comm, strnlen(e.victim_comm, OOM_COMM_LEN)),
          .kind = userspace ? "userspace" : "kernel",
          .killer = userspace ? std::string(e.trigger_comm, strnlen(e.trigger_comm, OOM_COMM_LEN))
                              : ""};
}

std::unique_ptr<RunWatcher> StartRunWatcher(
    const Config& config, const CgroupLayout& layout, StageResolver* stages,
    RunProbeReaders readers, bool oom_observed, bool populated_events,
    std::function<std::shared_ptr<const Snapshot>()> latest_snapshot) {
  const std::string& path = config.runs.ledger_path;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path, config.runs);
  if (!ledger.ok()) {
    Log::Warn("not recording runs: cannot open the run ledger; give a writable --ledger.path "
              "(the systemd unit's StateDirectory=stagewatch makes the default one)",
              {{"ledger", path}, {"err", ledger.status().message()}});
    return nullptr;
  }
  RunWatcherOptions options{.key_root = layout.key_root,
                            .layout = layout,
                            .populated_events = populated_events,
                            .runs = config.runs,
                            .oom_observed = oom_observed};
  if (config.runs.sample_reads_per_second > 0) {
    options.sampling = DiscoveredSamplerOptions{
        .layout = layout,
        .interval = config.memory.sample_interval,
        .near_limit_fraction = config.memory.near_limit_fraction,
        .reads_per_second = config.runs.sample_reads_per_second,
        .latest_snapshot = std::move(latest_snapshot)};
  }
  absl::StatusOr<std::unique_ptr<RunWatcher>> watcher =
      RunWatcher::Start(*std::move(ledger), stages, std::move(options), std::move(readers));
  if (!watcher.ok()) {
    Log::Warn("not recording runs", {{"ledger", path}, {"err", watcher.status().message()}});
    return nullptr;
  }
  return *std::move(watcher);
}

}  // namespace stagewatch
