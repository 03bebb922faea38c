// Loads bpf/placement.bpf.c and reads its per-cgroup CPU migrations, split by NUMA node.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "bpf/placement.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"
#include "signals/placement/cpu_nodes.h"

struct placement_bpf;

namespace stagewatch {

void DestroyPlacementSkeleton(placement_bpf* skel);

struct PlacementProbeOptions {
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  KernelFeatures features;
  CpuNodes cpu_nodes;  // given to the program before it attaches
};

// One cgroup's migrations, summed over the CPUs that moved its tasks.
struct PlacementCgroupCounts {
  uint64_t cgroup_id = 0;
  uint64_t node_migrations = 0;
  uint64_t cross_node_migrations = 0;
};

class PlacementProbe {
 public:
  // tp_btf where the kernel has BPF trampolines, else (or when the kernel refuses it) the raw
  // tracepoint. An error means nothing could be loaded; an attach that fails is in statuses().
  static absl::StatusOr<std::unique_ptr<PlacementProbe>> Start(
      const PlacementProbeOptions& options);

  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  // Run time and count of each loaded program (while kernel.bpf_stats_enabled is on).
  std::vector<ProgramStats> program_stats() const;

  // Every cgroup whose tasks migrated since it was last deleted.
  std::vector<PlacementCgroupCounts> Read() const;
  // One cgroup's, looked up (a run's cgroups at its end); nullopt when its tasks never migrated.
  std::optional<PlacementCgroupCounts> ReadCgroup(uint64_t cgroup_id) const;
  // Drops a dead cgroup's entry, so the map stays bounded by the live tree.
  void Delete(uint64_t cgroup_id);
  // Updates dropped because the map was full.
  uint64_t overflows() const;

  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  PlacementProbe() = default;

  SkeletonPtr<placement_bpf, DestroyPlacementSkeleton> skel_;
  std::vector<ProbeStatus> statuses_;
};

}  // namespace stagewatch
