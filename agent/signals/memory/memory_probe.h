// Loads bpf/memory.bpf.c: page faults and reclaim stalls per cgroup, aggregated in the kernel,
// read from its per-CPU map at collection time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "bpf/histogram.h"
#include "bpf/memory.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"

struct memory_bpf;
struct bpf_link;

namespace stagewatch {

void DestroyMemorySkeleton(memory_bpf* skel);
void DestroyMemoryProbeLink(bpf_link* link);

// Which hooks count page faults. kAuto is kExceptionTracepoints where the kernel has them
// (x86), else kPerfEvents (why: bpf/memory.bpf.c). The exception tracepoints count every
// fault exception, less the perf event's major faults.
enum class FaultSource { kAuto, kPerfEvents, kExceptionTracepoints };

struct MemoryProbeOptions {
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  KernelFeatures features;
  FaultSource fault_source = FaultSource::kAuto;
  // false: only major faults are counted (rare: no cost to a minor one) until
  // CountMinorFaults(); the minor ones are then counted by perf events (memory.stat is the
  // source of a stage's faults where the memory controller is, signals/memory/fault_counting.h).
  bool minor_faults = true;
};

// One cgroup's totals since its entry was created, summed over CPUs.
struct MemoryCgroupCounters {
  uint64_t cgroup_id = 0;
  uint64_t minor_faults = 0;
  uint64_t major_faults = 0;
  uint64_t reclaim_stalls = 0;   // reclaim passes that ended
  log2_hist reclaim_stall_ns{};  // slots in units of 2^HIST_UNIT_SHIFT ns, sum in ns
};

class MemoryProbe {
 public:
  // Opens, loads and attaches. The two probes, "page_faults" (attach_type "perf_event": one
  // event per online CPU and kind) and "reclaim_stall" ("raw_tracepoint"), are set up by
  // probing, and one failing leaves the other running; see statuses(). A kernel without the
  // memcg (or direct) reclaim tracepoints still times the other kind, but reports
  // reclaim_stall as not attached, saying so. An error means nothing could be loaded.
  static absl::StatusOr<std::unique_ptr<MemoryProbe>> Start(const MemoryProbeOptions& options);
  MemoryProbe(const MemoryProbe&) = delete;
  MemoryProbe& operator=(const MemoryProbe&) = delete;
  ~MemoryProbe();

  // Every cgroup the kernel side has seen, in no particular order.
  std::vector<MemoryCgroupCounters> Read() const;
  // One cgroup's reclaim stall time in ns; nullopt if the probe has no entry for it.
  std::optional<uint64_t> ReclaimStallNs(uint64_t cgroup_id) const;
  // Drops a dead cgroup's entry (after its totals were folded into its stage's).
  void Delete(uint64_t cgroup_id);
  // Starts counting minor faults, where Start() was told not to; a no-op once they are.
  absl::Status CountMinorFaults();
  bool counts_minor_faults() const { return counts_minor_; }

  // Updates the kernel side refused because a map was full: new cgroups not counted, and
  // reclaim passes not timed.
  uint64_t cgroup_overflows() const;
  // Major faults counted so far, of every cgroup (one word the kernel side keeps, read without
  // a system call): unchanged means no cgroup's major faults moved.
  uint64_t major_faults_seen() const;
  uint64_t reclaim_overflows() const;

  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  // Run time and count of each loaded program (while kernel.bpf_stats_enabled is on).
  std::vector<ProgramStats> program_stats() const;
  FaultSource fault_source() const { return fault_source_; }

  // The probes this module provides, in statuses() order.
  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  MemoryProbe() = default;

  // Declared before the links so the perf links are destroyed first.
  SkeletonPtr<memory_bpf, DestroyMemorySkeleton> skel_;
  // One per online CPU and event kind; each owns its perf event fd.
  std::vector<SkeletonPtr<bpf_link, DestroyMemoryProbeLink>> perf_links_;
  std::vector<ProbeStatus> statuses_;
  FaultSource fault_source_ = FaultSource::kAuto;
  bool counts_minor_ = false;
};

}  // namespace stagewatch
