// Lends the memory sampler's latest snapshot to the run watcher's thread. The watcher stops
// after the sampler (the sampler's thread pages anomalies to it), so it asks through this, and
// the agent detaches the sampler before destroying it: from then on there is no snapshot, and
// the watcher reads the run's own files.
#pragma once

#include <memory>

#include "absl/synchronization/mutex.h"
#include "sampler/memory_sampler.h"
#include "sampler/sample_snapshot.h"

namespace stagewatch {

class SnapshotSource {
 public:
  SnapshotSource() = default;
  explicit SnapshotSource(const MemorySampler* sampler) : sampler_(sampler) {}
  void Attach(const MemorySampler* sampler) {
    absl::MutexLock lock(&mu_);
    sampler_ = sampler;
  }

  // The sampler's latest snapshot; null once detached.
  std::shared_ptr<const Snapshot> Latest() const {
    absl::MutexLock lock(&mu_);
    return sampler_ ? sampler_->Latest() : nullptr;
  }
  // Waits for a Latest() in progress; the sampler is not asked again.
  void Detach() {
    absl::MutexLock lock(&mu_);
    sampler_ = nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  const MemorySampler* sampler_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace stagewatch
