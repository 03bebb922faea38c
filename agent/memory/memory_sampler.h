// Samples each stage's memory on a fixed interval into one snapshot that the memory collector
// and the anomaly detectors both adapt: the only reader of memory limits in the agent.
//
// A stage's limit lives on whichever of its cgroups has one (often a run's cgroup beneath an
// unlimited stage top). Each such cgroup, and each top, is a limit domain, watched on its own;
// per stage the snapshot shows the domain closest to its limit, time any domain was near its
// limit, and events summed so that each is counted once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "cgroup/memory_stats.h"
#include "config.h"
#include "stages/stage_counters.h"

namespace stagewatch {

// memory.events keys on v2; on v1, failcnt and oom_kill stand in.
inline constexpr std::array<const char*, 7> kMemoryEvents = {
    "low", "high", "max", "oom", "oom_kill", "oom_group_kill", "failcnt"};

struct StageMemory {
  uint64_t usage_bytes = 0;        // of the stage's top cgroups
  uint64_t working_set_bytes = 0;
  std::optional<uint64_t> swap_bytes;
  std::optional<double> psi_full_seconds;  // memory.pressure "full" total, where PSI exists
  // From the domain closest to its limit (highest usage / limit); none when no domain of the
  // stage has a limit.
  std::optional<uint64_t> limit_bytes;
  std::optional<uint64_t> headroom_bytes;        // limit - usage of that domain, floored at 0
  std::optional<uint64_t> limit_working_set_bytes;  // that domain's working set (for the ETA)
  bool near_limit = false;         // some domain is at or above near_limit_fraction now
  double near_limit_seconds = 0;   // time any domain was near its limit
  uint64_t peak_bytes = 0;         // since the agent started (and the kernel's own peak)
  size_t limit_domains = 0;        // tops plus limited descendants, tracked this sample
  std::vector<uint64_t> events = std::vector<uint64_t>(kMemoryEvents.size(), 0);
  absl::Time sampled_at = absl::InfinitePast();
};

// How the sampler reads cgroupfs; tests count the reads.
struct MemoryReader {
  // Everything about one cgroup (its path in the memory hierarchy).
  std::function<absl::StatusOr<MemoryCgroupStats>(const std::string&)> stats;
  // Only its own limit: memory.limit_in_bytes on v1, the lower of memory.max and memory.high
  // on v2; nullopt when unlimited.
  std::function<absl::StatusOr<std::optional<uint64_t>>(const std::string&)> limit;
};
MemoryReader CgroupfsMemoryReader(const CgroupLayout& layout);

class MemorySampler {
 public:
  MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config,
                std::optional<MemoryReader> reader = std::nullopt);
  ~MemorySampler();  // stops the thread

  // Called after each sample, on the sampler's thread (the anomaly detectors' clock).
  using Observer = std::function<void(absl::Time, const std::map<std::string, StageMemory>&)>;

  // Samples every config.sample_interval on a thread of its own.
  void Start(Observer observer = nullptr);

  // One sample, now (the thread calls this; tests call it directly).
  void SampleOnce(absl::Time now);

  std::map<std::string, StageMemory> Snapshot() const;

  // Limited cgroups left untracked because memory.max_limit_domains was reached.
  uint64_t domain_overflows() const { return overflows_.load(); }
  // Domains skipped for one sample because a file vanished or could not be parsed.
  uint64_t domain_skips() const { return skips_.load(); }

 private:
  struct Domain {
    std::string stage;
    bool top = false;
    MemoryCgroupStats stats;
    std::optional<uint64_t> limit;  // the lower of the hard and the soft limit
  };
  std::vector<std::pair<uint64_t, Domain>> ReadDomains();
  void Fold(absl::Time now, const std::vector<std::pair<uint64_t, Domain>>& domains);

  CgroupNamer* const namer_;
  const CgroupLayout layout_;
  const MemoryConfig config_;
  const MemoryReader reader_;
  std::atomic<uint64_t> overflows_{0}, skips_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, StageMemory> stages_ ABSL_GUARDED_BY(mu_);
  StageCounters events_ ABSL_GUARDED_BY(mu_);  // kMemoryEvents per domain
  Observer observer_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace stagewatch
