#include "signals/memory/memory_probe.h"

#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cgroup/cpu_list.h"
#include "memory.skel.h"
#include "probes/cgroup_map.h"
#include "probes/histogram_sum.h"

namespace stagewatch {

// The map layout is shared with bpf/memory.h and bpf/histogram.h; a change there must be a
// change here.
static_assert(sizeof(log2_hist) == (HIST_SLOTS + 2) * 8);
static_assert(offsetof(log2_hist, above) == HIST_SLOTS * 8);
static_assert(offsetof(log2_hist, sum) == HIST_SLOTS * 8 + 8);
static_assert(sizeof(memory_cgroup_stats) == 24 + sizeof(log2_hist));
static_assert(offsetof(memory_cgroup_stats, minor_faults) == 0);
static_assert(offsetof(memory_cgroup_stats, major_faults) == 8);
static_assert(offsetof(memory_cgroup_stats, reclaim_stalls) == 16);
static_assert(offsetof(memory_cgroup_stats, reclaim_stall) == 24);

namespace {

constexpr const char* kFaultProbe = "page_faults";
constexpr const char* kReclaimProbe = "reclaim_stall";

// The online CPUs' numbers (sysfs's "0-3,8,10-11").
absl::StatusOr<std::vector<int>> OnlineCpus() {
  constexpr const char* kPath = "/sys/devices/system/cpu/online";
  absl::StatusOr<std::vector<int>> cpus = ReadCpuListFile(kPath);
  if (absl::IsNotFound(cpus.status())) {
    return absl::UnavailableError(absl::StrCat("cannot read ", kPath, "; is sysfs mounted?"));
  }
  return cpus;
}

// A CPU-wide software event that overflows on every occurrence, for a BPF program to count.
int OpenSoftwareEvent(uint64_t config, int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = config;
  attr.sample_period = 1;
  attr.disabled = 1;  // attaching the program enables it
  // Faults taken in kernel mode (copy_to_user and friends) are in ru_minflt too: exclude none.
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, /*pid=*/-1, cpu,
                                  /*group_fd=*/-1, PERF_FLAG_FD_CLOEXEC));
}

// 0 when a page-fault software event opens on CPU 0, else the errno.
int ProbePerfSoftwareEvents() {
  int fd = OpenSoftwareEvent(PERF_COUNT_SW_PAGE_FAULTS_MAJ, 0);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

// Decides where faults are counted from; sets faults->error when that cannot work here.
FaultSource ChooseFaultSource(const KernelFeatures& f, FaultSource wanted, ProbeStatus* faults) {
  // The exception tracepoints where the kernel has them (x86): a raw tracepoint per fault
  // costs less than a perf software event overflowing into a program (bpf/memory.bpf.c).
  // Elsewhere the perf events, which exist on every architecture.
  const bool has_exceptions = f.raw_tracepoint && f.btf &&
                              BtfHasRawTracepoint(f.btf_path, "page_fault_user") &&
                              BtfHasRawTracepoint(f.btf_path, "page_fault_kernel");
  const FaultSource source =
      wanted != FaultSource::kAuto ? wanted
      : has_exceptions             ? FaultSource::kExceptionTracepoints
                                   : FaultSource::kPerfEvents;
  const int perf_errno = ProbePerfSoftwareEvents();
  if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, nullptr) != 1) {
    faults->error = "BPF perf_event programs are not available (BPF_PROG_TYPE_PERF_EVENT)";
  } else if (perf_errno != 0) {
    faults->error = absl::StrCat(
        "perf software events cannot be opened (", strerror(perf_errno),
        "): the kernel needs CONFIG_PERF_EVENTS, and the agent CAP_PERFMON or "
        "kernel.perf_event_paranoid <= 0 for CPU-wide events");
  } else if (source == FaultSource::kExceptionTracepoints && !has_exceptions) {
    faults->error = "raw tracepoints exceptions:page_fault_user/kernel are missing (x86 only)";
  } else {
    faults->attach_type = source == FaultSource::kPerfEvents ? "perf_event"
                                                             : "raw_tracepoint+perf_event";
  }
  return source;
}

// Opens `config` on every online CPU and attaches `prog` to each; the links go to `links`.
void AttachPerCpu(bpf_program* prog, uint64_t config,
                  std::vector<SkeletonPtr<bpf_link, DestroyMemoryProbeLink>>* links,
                  ProbeStatus* status) {
  absl::StatusOr<std::vector<int>> cpus = OnlineCpus();
  if (!cpus.ok()) {
    status->error = std::string(cpus.status().message());
    return;
  }
  // CPUs brought online later are not counted until the agent restarts.
  for (int cpu : *cpus) {
    int fd = OpenSoftwareEvent(config, cpu);
    if (fd < 0) {
      status->error = absl::StrCat("perf_event_open on CPU ", cpu, ": ", strerror(errno));
      return;
    }
    bpf_link* link = bpf_program__attach_perf_event(prog, fd);
    if (!link) {
      status->error = absl::StrCat("attaching ", bpf_program__name(prog), " on CPU ", cpu, ": ",
                                   strerror(errno));
      close(fd);  // the link closes it only once it owns it
      return;
    }
    links->emplace_back(link);
  }
}

// Attaches `prog`, keeping the link in the skeleton's slot so destroying the skeleton detaches.
void AttachToSlot(bpf_program* prog, bpf_link** slot, ProbeStatus* status) {
  if (!status->error.empty()) return;
  *slot = bpf_program__attach(prog);
  if (!*slot) {
    status->error = absl::StrCat("attaching ", bpf_program__name(prog), ": ", strerror(errno));
  }
}

void DetachSlot(bpf_link** slot) {
  bpf_link__destroy(*slot);  // accepts NULL
  *slot = nullptr;
}

}  // namespace

void DestroyMemorySkeleton(memory_bpf* skel) { memory_bpf__destroy(skel); }
void DestroyMemoryProbeLink(bpf_link* link) { bpf_link__destroy(link); }

MemoryProbe::~MemoryProbe() = default;

std::vector<ProbeStatus> MemoryProbe::NotStarted(const std::string& why) {
  return {{.name = kFaultProbe, .error = why}, {.name = kReclaimProbe, .error = why}};
}

absl::StatusOr<std::unique_ptr<MemoryProbe>> MemoryProbe::Start(
    const MemoryProbeOptions& options) {
  std::unique_ptr<MemoryProbe> probe(new MemoryProbe());
  const KernelFeatures& f = options.features;

  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!f.btf_path.empty()) open_opts.btf_custom_path = f.btf_path.c_str();
  probe->skel_.reset(memory_bpf__open_opts(&open_opts));
  if (!probe->skel_) {
    return absl::InternalError(absl::StrCat("opening the memory BPF object: ", strerror(errno)));
  }
  memory_bpf* skel = probe->skel_.get();
  auto& progs = skel->progs;
  auto& links = skel->links;
  skel->rodata->cgroup_key = options.key;
  skel->rodata->btf_current =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_task_btf,
                              nullptr) == 1 &&
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_get_current_task_btf,
                              nullptr) == 1;

  // ---- page faults: perf events for both kinds, or exception tracepoints for all faults.
  ProbeStatus faults{.name = kFaultProbe};
  // Minor faults counted later are counted by the perf event, which needs no major faults
  // subtracted that were counted before it attached.
  const FaultSource source = ChooseFaultSource(
      f, options.minor_faults ? options.fault_source : FaultSource::kPerfEvents, &faults);
  const bool use_faults = faults.error.empty();
  const bool exceptions = source == FaultSource::kExceptionTracepoints;
  bpf_program__set_autoload(progs.memory_minor_fault, use_faults && !exceptions);
  bpf_program__set_autoload(progs.memory_major_fault, use_faults);
  bpf_program__set_autoload(progs.memory_fault_user, use_faults && exceptions);
  bpf_program__set_autoload(progs.memory_fault_kernel, use_faults && exceptions);
  probe->fault_source_ = source;

  // ---- reclaim stalls: direct and memcg reclaim, each pair only where the kernel has it.
  ProbeStatus reclaim{.name = kReclaimProbe, .attach_type = "raw_tracepoint"};
  auto has_pair = [&](const char* begin, const char* end) {
    return f.raw_tracepoint && f.btf && BtfHasRawTracepoint(f.btf_path, begin) &&
           BtfHasRawTracepoint(f.btf_path, end);
  };
  const bool direct = has_pair("mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end");
  const bool memcg = has_pair("mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end");
  bpf_program__set_autoload(progs.memory_direct_reclaim_begin, direct);
  bpf_program__set_autoload(progs.memory_direct_reclaim_end, direct);
  bpf_program__set_autoload(progs.memory_memcg_reclaim_begin, memcg);
  bpf_program__set_autoload(progs.memory_memcg_reclaim_end, memcg);
  if (!f.raw_tracepoint) {
    reclaim.error = "raw tracepoints are not available (BPF_PROG_TYPE_RAW_TRACEPOINT)";
  } else if (!f.btf) {
    reclaim.error = "no kernel BTF to find the vmscan tracepoints; pass --bpf.btf-path";
  } else if (!direct && !memcg) {
    reclaim.error = "the kernel has no vmscan reclaim begin/end tracepoints";
  }

  if (int err = memory_bpf__load(skel); err) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the memory BPF programs: ", strerror(-err),
        "; run with --log.level=debug to see the verifier log"));
  }

  // ---- attach page faults; half a source would count wrong, so all of it or nothing.
  if (use_faults) {
    if (!options.minor_faults) {
      faults.attach_type = "perf_event";  // major faults only
    } else if (exceptions) {
      AttachToSlot(progs.memory_fault_user, &links.memory_fault_user, &faults);
      AttachToSlot(progs.memory_fault_kernel, &links.memory_fault_kernel, &faults);
    } else {
      AttachPerCpu(progs.memory_minor_fault, PERF_COUNT_SW_PAGE_FAULTS_MIN, &probe->perf_links_,
                   &faults);
    }
    if (faults.error.empty()) {
      AttachPerCpu(progs.memory_major_fault, PERF_COUNT_SW_PAGE_FAULTS_MAJ, &probe->perf_links_,
                   &faults);
    }
    faults.attached = faults.error.empty();
    probe->counts_minor_ = faults.attached && options.minor_faults;
    if (!faults.attached) {
      probe->perf_links_.clear();
      DetachSlot(&links.memory_fault_user);
      DetachSlot(&links.memory_fault_kernel);
    }
  }

  // ---- attach reclaim stalls: the ends first, so that no begin waits for an end unattached.
  if (reclaim.error.empty()) {
    struct Hook {
      bool wanted;
      bpf_program* prog;
      bpf_link** slot;
    };
    const Hook hooks[] = {
        {direct, progs.memory_direct_reclaim_end, &links.memory_direct_reclaim_end},
        {memcg, progs.memory_memcg_reclaim_end, &links.memory_memcg_reclaim_end},
        {direct, progs.memory_direct_reclaim_begin, &links.memory_direct_reclaim_begin},
        {memcg, progs.memory_memcg_reclaim_begin, &links.memory_memcg_reclaim_begin},
    };
    for (const Hook& hook : hooks) {
      if (hook.wanted) AttachToSlot(hook.prog, hook.slot, &reclaim);
    }
    if (!reclaim.error.empty()) {
      for (const Hook& hook : hooks) DetachSlot(hook.slot);
    } else if (!memcg) {
      // What is there stays attached, but this is not the probe asked for: cgroup limit
      // reclaim, the usual stall in containers, goes unseen.
      reclaim.error = "raw tracepoints mm_vmscan_memcg_reclaim_begin/end are missing: only "
                      "global direct reclaim is timed";
    } else if (!direct) {
      reclaim.error = "raw tracepoints mm_vmscan_direct_reclaim_begin/end are missing: only "
                      "memcg limit reclaim is timed";
    }
    reclaim.attached = reclaim.error.empty();
  }

  probe->statuses_ = {std::move(faults), std::move(reclaim)};
  return probe;
}

std::vector<MemoryCgroupCounters> MemoryProbe::Read() const {
  std::vector<MemoryCgroupCounters> out;
  auto add = [](memory_cgroup_stats& sum, const memory_cgroup_stats& cpu) {
    sum.minor_faults += cpu.minor_faults;
    sum.major_faults += cpu.major_faults;
    sum.reclaim_stalls += cpu.reclaim_stalls;
    AddHistogram(sum.reclaim_stall, cpu.reclaim_stall);
  };
  const bool exceptions = fault_source_ == FaultSource::kExceptionTracepoints;
  ForEachPerCpuEntry<memory_cgroup_stats>(
      bpf_map__fd(skel_->maps.memory_stats), add,
      [&](uint64_t cgroup_id, const memory_cgroup_stats& s) {
        uint64_t minor = s.minor_faults;
        // There minor_faults counted every fault exception, and each major fault raised one.
        if (exceptions) minor = minor > s.major_faults ? minor - s.major_faults : 0;
        out.push_back({.cgroup_id = cgroup_id,
                       .minor_faults = minor,
                       .major_faults = s.major_faults,
                       .reclaim_stalls = s.reclaim_stalls,
                       .reclaim_stall_ns = s.reclaim_stall});
      });
  return out;
}

absl::Status MemoryProbe::CountMinorFaults() {
  if (counts_minor_) return absl::OkStatus();
  if (bpf_program__fd(skel_->progs.memory_minor_fault) < 0 || perf_links_.empty()) {
    return absl::FailedPreconditionError("the page fault programs are not loaded");
  }
  ProbeStatus status{.name = kFaultProbe};
  const size_t before = perf_links_.size();
  AttachPerCpu(skel_->progs.memory_minor_fault, PERF_COUNT_SW_PAGE_FAULTS_MIN, &perf_links_,
               &status);
  if (!status.error.empty()) {
    perf_links_.resize(before);  // half the CPUs would count wrong
    return absl::InternalError(status.error);
  }
  counts_minor_ = true;
  return absl::OkStatus();
}

std::optional<uint64_t> MemoryProbe::ReclaimStallNs(uint64_t cgroup_id) const {
  auto add = [](memory_cgroup_stats& sum, const memory_cgroup_stats& cpu) {
    sum.reclaim_stall.sum += cpu.reclaim_stall.sum;
  };
  std::optional<memory_cgroup_stats> s = LookupPerCpu<uint64_t, memory_cgroup_stats>(
      bpf_map__fd(skel_->maps.memory_stats), cgroup_id, add);
  if (!s) return std::nullopt;
  return s->reclaim_stall.sum;
}

void MemoryProbe::Delete(uint64_t cgroup_id) {
  bpf_map__delete_elem(skel_->maps.memory_stats, &cgroup_id, sizeof(cgroup_id), 0);
}

uint64_t MemoryProbe::major_faults_seen() const {
  return __atomic_load_n(&skel_->bss->memory_major_faults_seen, __ATOMIC_RELAXED);
}

uint64_t MemoryProbe::cgroup_overflows() const {
  return __atomic_load_n(&skel_->bss->memory_stats_overflows, __ATOMIC_RELAXED);
}

uint64_t MemoryProbe::reclaim_overflows() const {
  return __atomic_load_n(&skel_->bss->memory_reclaim_overflows, __ATOMIC_RELAXED);
}

std::vector<ProgramStats> MemoryProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch
