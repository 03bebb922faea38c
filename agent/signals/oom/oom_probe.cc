#include "signals/oom/oom_probe.h"

#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "oom.skel.h"

namespace stagewatch {

// The event layout is shared with bpf/oom.h; a change there must be a change here.
static_assert(sizeof(oom_event) == 104);
static_assert(offsetof(oom_event, victim_cgroup_id) == 8);
static_assert(offsetof(oom_event, victim_pid) == 56);
static_assert(offsetof(oom_event, kind) == 68);
static_assert(offsetof(oom_event, victim_comm) == 72);
static_assert(offsetof(oom_event, trigger_comm) == 88);
static_assert(sizeof(oom_killer_exe) == 16);

namespace {

constexpr const char* kKernelKillProbe = "oom_kill";
constexpr const char* kUserspaceKillProbe = "oom_userspace_kill";

// One probe's two variants: the raw tracepoint (victim task in hand) and the classic one.
struct Variant {
  bpf_program* raw;
  bpf_program* classic;
};

// Picks the variant: raw when BTF shows the task argument, else classic when tracefs is there.
ProbeStatus Choose(const KernelFeatures& f, TracepointForm form, const char* probe,
                   const char* tracepoint, int task_arg, Variant v) {
  ProbeStatus status{.name = probe};
  const bool raw_works =
      f.raw_tracepoint && f.btf && RawTracepointArgIsTask(f.btf_path, tracepoint, task_arg);
  const bool use_raw = form != TracepointForm::kClassic && raw_works;
  const bool use_classic = form != TracepointForm::kRaw && !use_raw && f.tracefs;
  bpf_program__set_autoload(v.raw, use_raw);
  bpf_program__set_autoload(v.classic, use_classic);
  if (use_raw) {
    status.attach_type = "raw_tracepoint";
  } else if (use_classic) {
    status.attach_type = "tracepoint";
  } else {
    status.error = absl::StrCat(
        "raw tracepoint ", tracepoint,
        " does not pass the task here and tracefs is not mounted for the classic tracepoint; "
        "mount it with: mount -t tracefs nodev /sys/kernel/tracing");
  }
  return status;
}

// Where the known killers install themselves (Debian's earlyoom, systemd-oomd, oomd).
constexpr const char* kProgramDirs[] = {"/usr/bin", "/usr/sbin", "/usr/lib/systemd",
                                        "/usr/local/bin", "/usr/local/sbin", "/bin", "/sbin",
                                        "/lib/systemd"};

// The executables a killer may run: its name in the program directories, and the paths given.
std::vector<oom_killer_exe> KillerExecutables(const OomProbeOptions& options) {
  std::vector<std::string> candidates = options.userspace_killer_paths;
  for (const std::string& name : options.userspace_killers) {
    for (const char* dir : kProgramDirs) candidates.push_back(absl::StrCat(dir, "/", name));
  }
  std::vector<oom_killer_exe> exes;
  for (const std::string& path : candidates) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // The kernel's dev_t packs major and minor as 12:20 bits (include/linux/kdev_t.h).
    oom_killer_exe exe{.ino = st.st_ino,
                       .dev = static_cast<__u32>((major(st.st_dev) << 20) | minor(st.st_dev))};
    const bool seen = std::any_of(exes.begin(), exes.end(), [&](const oom_killer_exe& e) {
      return e.ino == exe.ino && e.dev == exe.dev;
    });
    if (!seen && exes.size() < OOM_MAX_KILLER_EXES) exes.push_back(exe);
  }
  return exes;
}

// Stores the link in the skeleton's slot, so destroying the skeleton detaches it.
void Attach(Variant v, bpf_link** raw_slot, bpf_link** classic_slot, ProbeStatus* status) {
  if (!status->error.empty()) return;
  const bool raw = status->attach_type == "raw_tracepoint";
  bpf_program* prog = raw ? v.raw : v.classic;
  bpf_link* link = bpf_program__attach(prog);
  if (!link) {
    status->error = absl::StrCat("attaching ", bpf_program__name(prog), ": ", strerror(errno));
    return;
  }
  *(raw ? raw_slot : classic_slot) = link;
  status->attached = true;
}

}  // namespace

std::vector<ProbeStatus> OomProbe::NotStarted(const std::string& why) {
  return {{.name = kKernelKillProbe, .error = why}, {.name = kUserspaceKillProbe, .error = why}};
}

absl::StatusOr<std::unique_ptr<OomProbe>> OomProbe::Start(const OomProbeOptions& options,
                                                          Handler handler) {
  std::unique_ptr<OomProbe> probe(new OomProbe(std::move(handler)));

  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!options.features.btf_path.empty()) open_opts.btf_custom_path = options.features.btf_path.c_str();
  probe->skel_.reset(oom_bpf__open_opts(&open_opts));
  if (!probe->skel_) {
    return absl::InternalError(absl::StrCat("opening the oom BPF object: ", strerror(errno)));
  }
  oom_bpf* skel = probe->skel_.get();
  const Variant kernel_kill{skel->progs.oom_mark_victim_raw, skel->progs.oom_mark_victim_tp};
  const Variant userspace_kill{skel->progs.oom_signal_generate_raw,
                               skel->progs.oom_signal_generate_tp};
  skel->rodata->cgroup_key = options.key;
  skel->rodata->killer_max_uid = static_cast<__u32>(std::max(0, options.userspace_killer_max_uid));

  probe->statuses_ = {
      Choose(options.features, options.form, kKernelKillProbe, "mark_victim", 0, kernel_kill),
      Choose(options.features, options.form, kUserspaceKillProbe, "signal_generate", 2,
             userspace_kill),
  };

  if (int err = oom_bpf__load(skel); err) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the oom BPF programs: ", strerror(-err),
        "; run with --log.level=debug to see the verifier log"));
  }

  int n = 0;
  for (const std::string& comm : options.userspace_killers) {
    if (n++ == OOM_MAX_KILLER_COMMS) break;
    char key[OOM_COMM_LEN] = {};
    strncpy(key, comm.c_str(), OOM_COMM_LEN - 1);
    uint8_t one = 1;
    bpf_map__update_elem(skel->maps.oom_killer_comms, key, sizeof(key), &one, sizeof(one), BPF_ANY);
  }
  for (const oom_killer_exe& exe : KillerExecutables(options)) {
    uint8_t one = 1;
    bpf_map__update_elem(skel->maps.oom_killer_exes, &exe, sizeof(exe), &one, sizeof(one),
                         BPF_ANY);
  }

  Attach(kernel_kill, &skel->links.oom_mark_victim_raw, &skel->links.oom_mark_victim_tp,
         &probe->statuses_[0]);
  Attach(userspace_kill, &skel->links.oom_signal_generate_raw,
         &skel->links.oom_signal_generate_tp, &probe->statuses_[1]);

  probe->ring_.reset(ring_buffer__new(bpf_map__fd(skel->maps.oom_events), &OomProbe::OnEvent,
                                  probe.get(), nullptr));
  if (!probe->ring_) {
    return absl::InternalError(absl::StrCat("creating the oom ring buffer: ", strerror(errno)));
  }
  return probe;
}

void DestroyOomSkeleton(oom_bpf* skel) { oom_bpf__destroy(skel); }
void FreeRingBuffer(ring_buffer* ring) { ring_buffer__free(ring); }

int OomProbe::OnEvent(void* ctx, void* data, size_t size) {
  if (size < sizeof(oom_event)) return 0;
  oom_event event;
  memcpy(&event, data, sizeof(event));
  static_cast<OomProbe*>(ctx)->handler_(event);
  return 0;
}

int OomProbe::Poll(int timeout_ms) { return ring_buffer__poll(ring_.get(), timeout_ms); }
int OomProbe::ready_fd() const { return ring_buffer__epoll_fd(ring_.get()); }
int OomProbe::Consume() { return ring_buffer__consume(ring_.get()); }

std::vector<ProbeStatus> OomProbe::statuses() const {
  std::vector<ProbeStatus> out = statuses_;
  // statuses_ is in enum oom_event_kind order: kernel kills, then user-space kills.
  const __u64* lost = skel_->bss->oom_events_lost;
  for (size_t kind = 0; kind < out.size(); kind++) {
    out[kind].lost_events = __atomic_load_n(&lost[kind], __ATOMIC_RELAXED);
  }
  return out;
}

bool OomProbe::traces_kernel_kills() const {
  return !statuses_.empty() && statuses_[OOM_KIND_KERNEL].attached;
}

uint64_t OomProbe::kernel_kills_dropped() const {
  return __atomic_load_n(&skel_->bss->oom_events_lost[OOM_KIND_KERNEL], __ATOMIC_RELAXED);
}

std::vector<ProgramStats> OomProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch
