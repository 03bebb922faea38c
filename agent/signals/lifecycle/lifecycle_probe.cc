#include "signals/lifecycle/lifecycle_probe.h"

#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "cgroup/proc_cgroup.h"
#include "lifecycle.skel.h"

namespace stagewatch {

// The event layout is shared with bpf/lifecycle.h; a change there must be a change here.
static_assert(sizeof(cgroup_event) == 1072);
static_assert(offsetof(cgroup_event, hierarchy_id) == 8);
static_assert(offsetof(cgroup_event, kind) == 12);
static_assert(offsetof(cgroup_event, path_len) == 14);
static_assert(offsetof(cgroup_event, memory_peak_pages) == 16);
static_assert(offsetof(cgroup_event, memory_failcnt) == 32);
static_assert(offsetof(cgroup_event, at_ns) == 40);
static_assert(offsetof(cgroup_event, path) == 48);

namespace {

constexpr const char* kProbe = "lifecycle";
constexpr const char* kPopulatedProbe = "lifecycle_populated";
constexpr const char* kPopulatedTracepoint = "cgroup_notify_populated";

// Both tracepoints must pass (struct cgroup *, const char *path), as BTF shows; where they do
// not, the agent names cgroups by walks.
std::string WhyNotUsable(const KernelFeatures& f) {
  if (!f.raw_tracepoint) return "raw tracepoints are not available";
  if (!f.ringbuf) return "BPF ring buffers are not available";
  if (!f.btf) return "no kernel BTF to check the tracepoints' arguments";
  for (const char* tp : {"cgroup_mkdir", "cgroup_rmdir"}) {
    if (!RawTracepointArgIsStruct(f.btf_path, tp, 0, "cgroup")) {
      return absl::StrCat("raw tracepoint ", tp, " is missing or does not pass the cgroup");
    }
  }
  return "";
}

// The populated flips are optional: older kernels lack the tracepoint, and the agent then
// finds runs of dead launchers by a slower sweep.
std::string WhyNoPopulatedEvents(const KernelFeatures& f) {
  if (!RawTracepointArgIsStruct(f.btf_path, kPopulatedTracepoint, 0, "cgroup")) {
    return absl::StrCat("raw tracepoint ", kPopulatedTracepoint,
                        " is missing or does not pass the cgroup; runs of dead launchers are "
                        "found by a sweep instead");
  }
  return "";
}

}  // namespace

std::vector<ProbeStatus> LifecycleProbe::NotStarted(const std::string& why) {
  return {{.name = kProbe, .error = why}, {.name = kPopulatedProbe, .error = why}};
}

absl::StatusOr<std::unique_ptr<LifecycleProbe>> LifecycleProbe::Start(const LifecycleProbeOptions& options,
                                                                Handler handler,
                                                                LostHandler lost) {
  if (!options.enabled) {
    return absl::FailedPreconditionError(
        "turned off by cgroup.lifecycle_events: false; cgroups are named by walks");
  }
  if (std::string why = WhyNotUsable(options.features); !why.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(why, "; cgroups are named by walks"));
  }
  absl::StatusOr<uint32_t> hierarchy = ReadOwnHierarchyId(options.key);
  if (!hierarchy.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot tell the keyed hierarchy's id: ", hierarchy.status().message(),
        "; cgroups are named by walks"));
  }
  std::unique_ptr<LifecycleProbe> probe(new LifecycleProbe(std::move(handler), std::move(lost)));
  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!options.features.btf_path.empty()) {
    open_opts.btf_custom_path = options.features.btf_path.c_str();
  }
  probe->skel_.reset(lifecycle_bpf__open_opts(&open_opts));
  if (!probe->skel_) {
    return absl::InternalError(absl::StrCat("opening the cgroup BPF object: ", strerror(errno)));
  }
  lifecycle_bpf* skel = probe->skel_.get();
  skel->rodata->target_hierarchy_id = *hierarchy;
  const std::string no_populated = WhyNoPopulatedEvents(options.features);
  bpf_program__set_autoload(skel->progs.cgroup_populated, no_populated.empty());
  if (int err = lifecycle_bpf__load(skel); err) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the cgroup BPF programs: ", strerror(-err),
        "; run with --log.level=debug to see the verifier log"));
  }
  if (int err = lifecycle_bpf__attach(skel); err) {
    return absl::FailedPreconditionError(
        absl::StrCat("attaching the cgroup tracepoints: ", strerror(-err)));
  }
  probe->ring_.reset(ring_buffer__new(bpf_map__fd(skel->maps.cgroup_events),
                                      &LifecycleProbe::OnEvent, probe.get(), nullptr));
  if (!probe->ring_) {
    return absl::InternalError(absl::StrCat("creating the cgroup ring buffer: ", strerror(errno)));
  }
  probe->status_ = {.name = kProbe, .attach_type = "raw_tracepoint", .attached = true};
  probe->populated_status_ = {.name = kPopulatedProbe, .error = no_populated};
  if (no_populated.empty()) {
    probe->populated_status_.attach_type = "raw_tracepoint";
    probe->populated_status_.attached = true;
  }
  return probe;
}

void DestroyLifecycleSkeleton(lifecycle_bpf* skel) { lifecycle_bpf__destroy(skel); }
void FreeLifecycleRingBuffer(ring_buffer* ring) { ring_buffer__free(ring); }

int LifecycleProbe::OnEvent(void* ctx, void* data, size_t size) {
  // Records carry only the used part of the path (bpf/lifecycle.bpf.c).
  if (size <= offsetof(cgroup_event, path)) return 0;
  cgroup_event event{};
  memcpy(&event, data, std::min(size, sizeof(event)));
  event.path[sizeof(event.path) - 1] = '\0';
  static_cast<LifecycleProbe*>(ctx)->handler_(event);
  return 0;
}

int LifecycleProbe::ready_fd() const { return ring_buffer__epoll_fd(ring_.get()); }

int LifecycleProbe::Drain() {
  absl::MutexLock lock(&drain_mu_);
  int handled = ring_buffer__consume(ring_.get());
  if (const uint64_t now_lost = lost(); now_lost != lost_seen_) {
    lost_seen_ = now_lost;
    if (lost_handler_) lost_handler_();
  }
  return handled;
}

uint64_t LifecycleProbe::lost() const {
  return __atomic_load_n(&skel_->bss->cgroup_events_lost, __ATOMIC_RELAXED);
}

std::vector<ProbeStatus> LifecycleProbe::statuses() const {
  ProbeStatus s = status_;
  s.lost_events = lost();  // one ring buffer for both
  return {s, populated_status_};
}

std::vector<ProgramStats> LifecycleProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch
