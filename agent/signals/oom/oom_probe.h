// Loads bpf/oom.bpf.c and delivers its OOM kill events.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"
#include "bpf/oom.h"
#include "probes/features.h"
#include "probes/probe_status.h"
#include "probes/program_stats.h"
#include "probes/skeleton.h"

struct oom_bpf;
struct ring_buffer;

namespace stagewatch {

void DestroyOomSkeleton(oom_bpf* skel);
void FreeRingBuffer(ring_buffer* ring);

// Which tracepoint form to attach. kAuto takes the raw form where BTF shows it passes the task,
// else the classic one; the others force a form (to compare them).
enum class TracepointForm { kAuto, kRaw, kClassic };

struct OomProbeOptions {
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  std::vector<std::string> userspace_killers;  // comms, at most OOM_MAX_KILLER_COMMS
  // A killer's SIGKILL counts only if its executable is one of these: each name looked up in
  // the system's program directories, plus these paths. And only if it runs as a uid at most
  // userspace_killer_max_uid.
  std::vector<std::string> userspace_killer_paths;
  int userspace_killer_max_uid = 999;
  KernelFeatures features;
  TracepointForm form = TracepointForm::kAuto;
};

class OomProbe {
 public:
  using Handler = std::function<void(const oom_event&)>;

  // Opens, loads and attaches. Each of the two probes (kernel kills, user-space kills) picks
  // its raw or classic tracepoint by probing, and one failing leaves the other running; see
  // statuses(). An error means nothing could be loaded.
  static absl::StatusOr<std::unique_ptr<OomProbe>> Start(const OomProbeOptions& options,
                                                         Handler handler);
  OomProbe(const OomProbe&) = delete;
  OomProbe& operator=(const OomProbe&) = delete;

  // Waits up to `timeout_ms` for events and hands each to the handler. Returns the number
  // handled, or a negative errno.
  int Poll(int timeout_ms);
  // Readable (poll(2)) when events are queued; Consume() hands them to the handler without
  // waiting. For a thread that sleeps until there is work or it is told to stop.
  int ready_fd() const;
  int Consume();

  // Each probe's state, with the events it dropped because the ring buffer was full.
  std::vector<ProbeStatus> statuses() const;
  // Whether the kernel's kills are traced, and how many of their events were dropped so far.
  bool traces_kernel_kills() const;
  uint64_t kernel_kills_dropped() const;
  // Run time and count of each loaded program (while kernel.bpf_stats_enabled is on).
  std::vector<ProgramStats> program_stats() const;

  // The probes this module provides, in statuses() order.
  static std::vector<ProbeStatus> NotStarted(const std::string& why);

 private:
  OomProbe(Handler handler) : handler_(std::move(handler)) {}
  static int OnEvent(void* ctx, void* data, size_t size);

  Handler handler_;
  // Members are destroyed in reverse: the ring buffer goes before the skeleton and its maps.
  SkeletonPtr<oom_bpf, DestroyOomSkeleton> skel_;
  SkeletonPtr<ring_buffer, FreeRingBuffer> ring_;
  std::vector<ProbeStatus> statuses_;
};

}  // namespace stagewatch
