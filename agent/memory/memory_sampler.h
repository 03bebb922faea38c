// Samples each stage's memory usage against its limit on a fixed interval: time spent near
// the limit, and the peak usage, which a scrape every 15 s or more would miss.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "config.h"

namespace stagewatch {

struct StageMemory {
  uint64_t usage_bytes = 0;
  uint64_t working_set_bytes = 0;
  std::optional<double> psi_full_seconds;  // memory.pressure "full" total, where PSI exists
  std::optional<uint64_t> limit_bytes;  // none when any of the stage's cgroups is unlimited
  double near_limit_seconds = 0;        // with usage >= near_limit_fraction * limit
  uint64_t peak_bytes = 0;              // since the agent started (and the kernel's own peak)
  absl::Time sampled_at = absl::InfinitePast();
};

class MemorySampler {
 public:
  MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config);
  ~MemorySampler();  // stops the thread

  // Called after each sample, on the sampler's thread (the anomaly detectors' clock).
  using Observer = std::function<void(absl::Time, const std::map<std::string, StageMemory>&)>;

  // Samples every config.sample_interval on a thread of its own.
  void Start(Observer observer = nullptr);

  // One sample, now (the thread calls this; tests call it directly).
  void SampleOnce(absl::Time now);

  std::map<std::string, StageMemory> Snapshot() const;

 private:
  CgroupNamer* const namer_;
  const CgroupLayout layout_;
  const MemoryConfig config_;
  mutable absl::Mutex mu_;
  std::map<std::string, StageMemory> stages_ ABSL_GUARDED_BY(mu_);
  Observer observer_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace stagewatch
