// What the sampler read from cgroupfs in one pass, as one immutable object: the memory
// collector, the sched collector, the oom collector, the anomaly feeder and its detectors all
// adapt the same Snapshot, so a scrape and a detector never see two readings of one file.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cgroup/numa_stat.h"
#include "cgroup/numa_topology.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

// The parts of a Snapshot, one per signal that adapts it (Signal::snapshot_parts).
enum SnapshotPart : unsigned {
  kMemoryPart = 1 << 0,  // Snapshot::memory and Snapshot::pressure: signal "memory"
  kCpuPart = 1 << 1,     // Snapshot::cpu: signal "sched"
  kOomPart = 1 << 2,     // Snapshot::oom_kills: signal "oom"
  kPlacementPart = 1 << 3,  // Snapshot::placement and numa_topology: signal "placement"
};

// memory.events keys on v2; on v1, failcnt and oom_kill stand in.
inline constexpr std::array<const char*, 7> kMemoryEvents = {
    "low", "high", "max", "oom", "oom_kill", "oom_group_kill", "failcnt"};

// One limit domain in a sample.
struct DomainMemory {
  uint64_t id = 0;    // its cgroup id
  std::string path;   // in the memory hierarchy
  bool top = false;   // a stage top (else a cgroup beneath with a limit of its own)
  bool sampled = false;  // false: its files could not be read this sample, it sat it out
  uint64_t usage_bytes = 0;
  uint64_t working_set_bytes = 0;
  std::optional<uint64_t> limit_bytes;  // the lower of the hard and the soft limit
  // The files behind them, for a run whose cgroup is this domain (runs/run_cgroup_files.h).
  // Only usage is read every sample: the others are re-read when usage moved, else every
  // kFullReadEvery samples (memory/memory_sampler.h), so they may be that many samples old.
  std::optional<uint64_t> peak_bytes;  // the kernel's: v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> failcnt;     // v1 memory.failcnt, v2 memory.events "max"
};

struct StageMemory {
  Stage stage;
  uint64_t usage_bytes = 0;        // of the stage's top cgroups
  uint64_t working_set_bytes = 0;
  std::optional<uint64_t> swap_bytes;
  std::optional<double> psi_full_seconds;  // memory.pressure "full" total, where PSI exists
  // From the domain closest to its limit (highest usage / limit); none when no domain of the
  // stage has a limit.
  std::optional<uint64_t> limit_bytes;
  std::optional<uint64_t> headroom_bytes;  // limit - usage of that domain, floored at 0
  bool near_limit = false;         // some domain is at or above near_limit_fraction now
  double near_limit_seconds = 0;   // time any domain was near its limit
  uint64_t peak_bytes = 0;         // since the agent started (and the kernel's own peak)
  size_t limit_domains = 0;        // tops plus limited descendants, read this sample
  // Every domain tracked this sample, read or not; empty once the stage has no cgroup.
  std::vector<DomainMemory> domains;
  std::vector<uint64_t> events = std::vector<uint64_t>(kMemoryEvents.size(), 0);
  absl::Time sampled_at = absl::InfinitePast();
};

// PSI of the stage's tops, in µs since the agent saw them (a top without PSI counts 0).
struct StagePressure {
  uint64_t memory_some_us = 0, memory_full_us = 0, io_some_us = 0, io_full_us = 0;
};

// cpu.stat (v1 cpu + cpuacct) and cpu.pressure of the stage's tops, since the agent saw them.
struct StageCpu {
  uint64_t usage_ns = 0, periods = 0, throttled_periods = 0, throttled_ns = 0;
  uint64_t pressure_some_us = 0, pressure_full_us = 0;
};

// A stage's page faults, from its tops' memory.stat (sampler/memcg_faults.h).
struct StageFaults {
  uint64_t minor = 0, major = 0;
};

// Where a stage's memory lives and where its tasks may run, from its tops' files. Like
// StageMemory's usage, the sum of its tops' hierarchical figures.
struct StagePlacement {
  // memory.numa_stat, summed: bytes per node. Read with memory.stat (kFullReadEvery), so it
  // may be that many samples old; absent where no top's could be read (a kernel without
  // CONFIG_NUMA has none).
  std::optional<NumaMemory> numa;
  // The union of its tops' effective cpusets (cgroup/cpuset.h), read once every
  // kFullReadEvery samples; absent where none could be read.
  std::optional<std::vector<int>> cpus, mems;
};

// A snapshot's parts by stage: B-trees, whose nodes hold many stages each, so that a sample of
// 500 stages makes (and its predecessor frees) a few dozen nodes per part, not 500.
template <typename T>
using StageMap = absl::btree_map<StageId, T>;
using StageSet = absl::btree_set<StageId>;

struct Snapshot {
  absl::Time taken = absl::InfinitePast();  // InfinitePast: nothing sampled yet
  // The samples so far in which a task of some stage ran (by the sched probe), or that could
  // not tell: where two snapshots have the same count, no stage's task ran between them.
  uint64_t samples_a_stage_ran = 0;
  StageMap<StageMemory> memory;
  StageMap<StagePressure> pressure;  // every stage that had a top
  StageMap<StageCpu> cpu;            // likewise; empty without kCpuPart
  absl::Status cpu_error;  // the first cpu.stat of a top that could not be read, but exists
  // The kernel's own oom_kill counts (v1 memory.oom_control, v2 memory.events.local) of every
  // live cgroup, summed per stage, counted from the sampler's first reading (before the OOM
  // probe attaches): kills before the agent started are the baseline. Read on a slower clock
  // than the rest (see kOomCountsInterval); between readings each snapshot carries the last
  // one. Empty without kOomPart.
  StageMap<uint64_t> oom_kills;
  absl::Time oom_kills_read = absl::InfinitePast();  // when they were read
  // Page faults of each stage whose tops have the memory controller, since each top was made;
  // empty with memory.fault_source: bpf. A top whose usage did not move keeps its last full
  // reading for up to kFullReadEvery samples, its faults too.
  StageMap<StageFaults> faults;
  // Stages with a top that has no memory controller: no memcg figures (BPF counts those).
  StageSet faults_uncovered;
  // Every stage that had a top; empty without kPlacementPart. A stage none of whose tops was
  // read again shares its placement with the snapshot before.
  StageMap<std::shared_ptr<const StagePlacement>> placement;
  // The first memory.numa_stat or cpuset of a top that could not be read (NotFound for
  // memory.numa_stat: the kernel has no CONFIG_NUMA), or the host's NUMA topology's error.
  absl::Status placement_error;
  // The host's nodes and CPUs, read as the sampler started; null without kPlacementPart.
  std::shared_ptr<const NumaTopology> numa_topology;
};

}  // namespace stagewatch
