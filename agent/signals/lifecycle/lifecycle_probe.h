// Loads bpf/lifecycle.bpf.c and delivers cgroup mkdir/rmdir events of one hierarchy, and where the
// kernel has the tracepoint, the moments a cgroup got its first task or lost its last.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "bpf/lifecycle.h"
#include "bpf/cgroup_key.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"

struct lifecycle_bpf;
struct ring_buffer;

namespace stagewatch {

void DestroyLifecycleSkeleton(lifecycle_bpf* skel);
void FreeLifecycleRingBuffer(ring_buffer* ring);

struct LifecycleProbeOptions {
  bool enabled = true;  // cgroup.lifecycle_events; false reports the probe as turned off
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;  // events of other hierarchies are not sent
  KernelFeatures features;
};

class LifecycleProbe {
 public:
  using Handler = std::function<void(const cgroup_event&)>;
  // Called after events were found lost, once the ring buffer has been drained.
  using LostHandler = std::function<void()>;

  // Opens, loads and attaches the tracepoints; an error (mkdir/rmdir are missing or do not
  // pass the cgroup and its path) means the caller names cgroups by walks instead. Without
  // cgroup_notify_populated it starts all the same, without the populated events.
  static absl::StatusOr<std::unique_ptr<LifecycleProbe>> Start(const LifecycleProbeOptions& options,
                                                            Handler handler, LostHandler lost);
  LifecycleProbe(const LifecycleProbe&) = delete;
  LifecycleProbe& operator=(const LifecycleProbe&) = delete;

  // Handles what is queued now, from any thread (one at a time).
  int Drain();
  // Readable (poll(2)) when events are queued, for a thread that sleeps until then.
  int ready_fd() const;

  // Whether CGROUP_EVENT_POPULATED and CGROUP_EVENT_UNPOPULATED events come.
  bool populated_events() const { return populated_status_.attached; }

  std::vector<ProbeStatus> statuses() const;
  std::vector<ProgramStats> program_stats() const;
  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  LifecycleProbe(Handler handler, LostHandler lost)
      : handler_(std::move(handler)), lost_handler_(std::move(lost)) {}
  static int OnEvent(void* ctx, void* data, size_t size);
  uint64_t lost() const;

  Handler handler_;
  LostHandler lost_handler_;
  absl::Mutex drain_mu_;  // the ring buffer has one consumer at a time
  uint64_t lost_seen_ ABSL_GUARDED_BY(drain_mu_) = 0;
  // Members are destroyed in reverse: the ring buffer goes before the skeleton and its maps.
  SkeletonPtr<lifecycle_bpf, DestroyLifecycleSkeleton> skel_;
  SkeletonPtr<ring_buffer, FreeLifecycleRingBuffer> ring_;
  ProbeStatus status_;
  ProbeStatus populated_status_;
};

}  // namespace stagewatch
