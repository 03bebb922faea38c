// Loads bpf/sched.bpf.c and reads its per-cgroup CPU contention aggregates.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"
#include "bpf/sched.h"

struct sched_bpf;

namespace stagewatch {

// Adds one CPU's copy of a cgroup's counts to `sum`.
void AddSchedCopy(sched_cgroup_stats& sum, const sched_cgroup_stats& copy);

void DestroySchedSkeleton(sched_bpf* skel);

// Where the run-queue wait comes from. kAuto reads task->sched_info where the kernel keeps it
// and falls back to a sched_wakeup hook; the others force one (to compare them).
enum class RunqSource { kAuto, kSchedInfo, kWakeupHook };

struct SchedProbeOptions {
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  KernelFeatures features;
  RunqSource runq_source = RunqSource::kAuto;
};

class SchedProbe {
 public:
  // Tries tp_btf where the kernel has BPF trampolines, then raw tracepoints. The run-queue
  // wait comes from task->sched_info.run_delay where the kernel keeps it (CONFIG_SCHED_INFO),
  // else from a sched_wakeup hook. A probe that cannot attach is reported in statuses().
  // Needs bpf_get_current_task_btf() and task-local storage (Linux 5.11).
  static absl::StatusOr<std::unique_ptr<SchedProbe>> Start(const SchedProbeOptions& options);

  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  // Run time and count of each loaded program (while kernel.bpf_stats_enabled is on).
  std::vector<ProgramStats> program_stats() const;
  std::string runq_source() const;
  // Whether runq_throttled_ns tells the throttled part of the run-queue wait (sched_info source
  // on a kernel with cfs_rq throttled times); else it stays 0 and the part is unknown.
  bool splits_throttled_wait() const { return splits_throttled_wait_; }

  // Per cgroup id, summed over CPUs.
  std::map<uint64_t, sched_cgroup_stats> ReadCgroups() const;
  // What ReadCgroups sums: `fn(slot, cpu, copy)` for each CPU's copy of each slot that counts
  // for a cgroup, for a caller that keeps its sums from read to read (or splits them by CPU).
  using SlotCopyFn = absl::FunctionRef<void(uint32_t slot, int cpu, const sched_cgroup_stats&)>;
  void ForEachCgroupCopy(SlotCopyFn fn) const;
  // The same for the given slots only.
  void ForEachCopyOfSlots(const std::vector<uint32_t>& slots, SlotCopyFn fn) const;
  // The slots that counted since the last call, ascending, their marks cleared: a caller that
  // takes them before each read can read only those (and, since a mark is set as a count
  // begins, those of the call before too, to have the counts finished).
  std::vector<uint32_t> TakeMovedSlots();
  // The cgroups a task of which ran since the last call: switched out (the slots that moved,
  // as TakeMovedSlots sees them too) or on a CPU now. nullopt when the probe cannot tell: a
  // switch found no free slot since the last call, this is the first call, or switches are
  // not traced.
  std::optional<std::vector<uint64_t>> TakeCgroupsThatRan();
  // One cgroup's, summed over CPUs; nullopt if the probe has no entry for it.
  std::optional<sched_cgroup_stats> ReadCgroup(uint64_t cgroup_id) const;
  // One cgroup's on-CPU nanoseconds by the CPU they ran on (a run's CPU time by node at its
  // end); nullopt if the probe has no entry for it.
  std::optional<std::vector<uint64_t>> ReadOncpuByCpu(uint64_t cgroup_id) const;
  // (preempted cgroup, preempting cgroup) → count.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> ReadPreemptions() const;
  // The same, unordered: for a caller that looks each pair up in its own map.
  std::vector<std::pair<sched_pair, uint64_t>> ReadPreemptionEntries() const;
  // Whether a pair counted since the last call (true at the first), clearing the kernel's
  // mark: a reader that takes it before each ReadPreemptionEntries() and reads only when it
  // is set misses no count. For one reader: the tracker's collection.
  bool TakePairsCounted();
  // Cgroup id → CPUs running one of its tasks right now (asks each CPU: one IPI per CPU).
  std::map<uint64_t, int> ReadRunning() const;
  // Drops dead cgroups' entries so the maps stay bounded by the live tree: the pairs map is
  // read once for all of them (once for each, 10,000 cgroups removed at once held the sampler
  // for minutes).
  void Forget(const std::set<uint64_t>& cgroup_ids);

  uint64_t stats_overflows() const;
  uint64_t pair_overflows() const;
  // Slots of the stats array held by cgroups now: given by the probe, less those Forget freed.
  uint64_t slots_in_use() const;

  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  SchedProbe() = default;

  SkeletonPtr<sched_bpf, DestroySchedSkeleton> skel_;
  std::vector<ProbeStatus> statuses_;
  bool splits_throttled_wait_ = false;
  bool traces_switches_ = false;  // the switch program attached: its marks mean something
  bool pairs_unread_ = true;      // TakePairsCounted() not called yet
  std::atomic<uint64_t> slots_freed_{0};

  // The kernel's moved marks are taken once for both readers, TakeMovedSlots and
  // TakeCgroupsThatRan; each keeps those the other took until it asks.
  enum MarkReader { kCountsReader, kRanReader, kMarkReaders };
  std::vector<uint32_t> TakeMarks(MarkReader reader);
  // ReadRunning's, nullopt where a CPU could not be asked.
  std::optional<std::map<uint64_t, int>> RunningIfKnown() const;
  std::mutex marks_mu_;
  std::vector<uint64_t> pending_marks_[kMarkReaders];
  std::optional<uint64_t> ran_overflows_seen_;
};

}  // namespace stagewatch
