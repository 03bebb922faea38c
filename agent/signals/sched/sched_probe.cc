#include "signals/sched/sched_probe.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "probes/cgroup_map.h"
#include "probes/histogram_sum.h"
#include "sched.skel.h"

namespace stagewatch {

static_assert(sizeof(log2_hist) == (HIST_SLOTS + 2) * 8);
static_assert(sizeof(sched_cgroup_stats) == 64 + sizeof(log2_hist));
static_assert(offsetof(sched_cgroup_stats, runq_latency) == 40);
static_assert(offsetof(sched_cgroup_stats, runq_throttled_ns) == 40 + sizeof(log2_hist));
static_assert(sizeof(sched_pair) == 16);

namespace {

constexpr const char* kSwitchProbe = "sched_switch";
constexpr const char* kExitProbe = "sched_process_exit";
constexpr const char* kWakeupProbe = "sched_wakeup";

void AddCount(uint64_t& sum, const uint64_t& cpu) { sum += cpu; }

// Whether the kernel sums each task's run-queue waits (CONFIG_SCHED_INFO).
bool HasSchedInfo(const KernelFeatures& f) {
  return BtfStructHasMember(f.btf_path, "sched_info", "run_delay");
}

// Whether the kernel keeps each cfs_rq's throttled time, own or an ancestor's (Linux 6.6).
bool HasCfsThrottledTime(const KernelFeatures& f) {
  return BtfStructHasMember(f.btf_path, "cfs_rq", "throttled_clock_self_time") &&
         BtfStructHasMember(f.btf_path, "sched_entity", "cfs_rq");
}

uint64_t MonotonicNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Attempt {
  SkeletonPtr<sched_bpf, DestroySchedSkeleton> skel;
  int err = 0;
};

// Opens and loads with the chosen switch variant; tp_btf and raw_tp are otherwise the same.
Attempt OpenAndLoad(const SchedProbeOptions& o, bool tp_btf, bool sched_info) {
  Attempt a;
  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!o.features.btf_path.empty()) open_opts.btf_custom_path = o.features.btf_path.c_str();
  a.skel.reset(sched_bpf__open_opts(&open_opts));
  if (!a.skel) {
    a.err = -errno;
    return a;
  }
  sched_bpf* s = a.skel.get();
  s->rodata->cgroup_key = o.key;
  s->rodata->runq_source = sched_info ? SCHED_RUNQ_SCHED_INFO : SCHED_RUNQ_WAKEUP_HOOK;
  s->rodata->loaded_at_ns = MonotonicNowNs();
  bpf_program__set_autoload(s->progs.sched_switch_btf, tp_btf);
  bpf_program__set_autoload(s->progs.sched_switch_raw, !tp_btf);
  bpf_program__set_autoload(s->progs.sched_wakeup_raw, !sched_info);
  bpf_program__set_autoload(s->progs.sched_wakeup_new_raw, !sched_info);
  a.err = sched_bpf__load(s);
  if (a.err) a.skel.reset();
  return a;
}

// Every slot of sched_stats free, the lowest on top of the stack (bpf/sched.bpf.c).
absl::Status FreeEverySlot(sched_bpf* s) {
  const int fd = bpf_map__fd(s->maps.sched_free_slots);
  for (uint32_t slot = SCHED_MAX_CGROUPS; slot-- > 0;) {
    if (bpf_map_update_elem(fd, nullptr, &slot, BPF_ANY) != 0) {
      return absl::InternalError(
          absl::StrCat("filling the sched probe's free slots: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

ProbeStatus AttachOne(const char* name, const char* type, bpf_program* prog, bpf_link** slot) {
  ProbeStatus status{.name = name, .attach_type = type};
  *slot = bpf_program__attach(prog);
  if (*slot) {
    status.attached = true;
  } else {
    status.error = absl::StrCat("attaching ", bpf_program__name(prog), ": ", strerror(errno));
  }
  return status;
}

}  // namespace

void DestroySchedSkeleton(sched_bpf* skel) { sched_bpf__destroy(skel); }

void AddSchedCopy(sched_cgroup_stats& sum, const sched_cgroup_stats& cpu) {
  sum.cgroup = cpu.cgroup;
  sum.voluntary_switches += cpu.voluntary_switches;
  sum.nonvoluntary_switches += cpu.nonvoluntary_switches;
  sum.oncpu_ns += cpu.oncpu_ns;
  sum.exited_processes += cpu.exited_processes;
  AddHistogram(sum.runq_latency, cpu.runq_latency);
  sum.runq_throttled_ns += cpu.runq_throttled_ns;
  sum.first_waits += cpu.first_waits;
  sum.first_wait_ns += cpu.first_wait_ns;
}

std::vector<ProbeStatus> SchedProbe::NotStarted(const std::string& why) {
  return {{.name = kSwitchProbe, .error = why}, {.name = kExitProbe, .error = why}};
}

absl::StatusOr<std::unique_ptr<SchedProbe>> SchedProbe::Start(const SchedProbeOptions& options) {
  const bool sched_info = options.runq_source == RunqSource::kAuto
                              ? HasSchedInfo(options.features)
                              : options.runq_source == RunqSource::kSchedInfo;
  bool tp_btf = options.features.tracing;
  Attempt a = OpenAndLoad(options, tp_btf, sched_info);
  if (!a.skel && tp_btf) {  // trampolines refused after all: the raw form needs none
    tp_btf = false;
    a = OpenAndLoad(options, tp_btf, sched_info);
  }
  if (!a.skel) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the sched BPF programs: ", strerror(-a.err),
        "; run with --log.level=debug to see the verifier log"));
  }
  std::unique_ptr<SchedProbe> probe(new SchedProbe());
  probe->skel_ = std::move(a.skel);
  probe->splits_throttled_wait_ = sched_info && HasCfsThrottledTime(options.features);
  sched_bpf* s = probe->skel_.get();
  if (absl::Status filled = FreeEverySlot(s); !filled.ok()) return filled;
  probe->statuses_.push_back(
      tp_btf ? AttachOne(kSwitchProbe, "tp_btf", s->progs.sched_switch_btf, &s->links.sched_switch_btf)
             : AttachOne(kSwitchProbe, "raw_tracepoint", s->progs.sched_switch_raw,
                         &s->links.sched_switch_raw));
  probe->traces_switches_ = probe->statuses_.back().attached;
  probe->statuses_.push_back(AttachOne(kExitProbe, "raw_tracepoint", s->progs.sched_process_exit_raw,
                                       &s->links.sched_process_exit_raw));
  if (!sched_info) {
    ProbeStatus wakeup = AttachOne(kWakeupProbe, "raw_tracepoint", s->progs.sched_wakeup_raw,
                                   &s->links.sched_wakeup_raw);
    if (wakeup.attached) {
      wakeup = AttachOne(kWakeupProbe, "raw_tracepoint", s->progs.sched_wakeup_new_raw,
                         &s->links.sched_wakeup_new_raw);
    }
    probe->statuses_.push_back(wakeup);
  }
  return probe;
}

std::string SchedProbe::runq_source() const {
  return skel_->rodata->runq_source == SCHED_RUNQ_SCHED_INFO ? "sched_info" : "wakeup_hook";
}

std::map<uint64_t, sched_cgroup_stats> SchedProbe::ReadCgroups() const {
  std::map<uint64_t, sched_cgroup_stats> out;
  ForEachCgroupCopy([&out](uint32_t, int, const sched_cgroup_stats& copy) {
    AddSchedCopy(out[copy.cgroup], copy);
  });
  return out;
}

void SchedProbe::ForEachCgroupCopy(SlotCopyFn fn) const {
  // Slots are taken from the bottom: read up to the highest any CPU has counted in.
  uint32_t slots = 0;
  ForEachPerCpuArrayCopy<uint32_t>(
      bpf_map__fd(skel_->maps.sched_slots_seen), 1,
      [&slots](uint32_t, int, uint32_t n) { slots = std::max(slots, n); });
  ForEachPerCpuArrayCopy<sched_cgroup_stats>(
      bpf_map__fd(skel_->maps.sched_stats), std::min<uint32_t>(slots, SCHED_MAX_CGROUPS),
      [&fn](uint32_t slot, int cpu, const sched_cgroup_stats& copy) {
        if (copy.cgroup) fn(slot, cpu, copy);  // else counting for no one
      });
}

void SchedProbe::ForEachCopyOfSlots(const std::vector<uint32_t>& slots, SlotCopyFn fn) const {
  const int fd = bpf_map__fd(skel_->maps.sched_stats);
  for (uint32_t slot : slots) {
    ForEachCpuCopyOf<uint32_t, sched_cgroup_stats>(
        fd, slot, [&](int cpu, const sched_cgroup_stats& copy) {
          if (copy.cgroup) fn(slot, cpu, copy);
        });
  }
}

std::vector<uint32_t> SchedProbe::TakeMarks(MarkReader reader) {
  // A word of eight marks at a time: an exchange, so that a mark set meanwhile stays.
  static_assert(SCHED_MAX_CGROUPS % sizeof(uint64_t) == 0);
  constexpr uint32_t kWords = SCHED_MAX_CGROUPS / sizeof(uint64_t);
  auto* words = reinterpret_cast<uint64_t*>(skel_->bss->sched_moved);
  std::lock_guard lock(marks_mu_);
  for (std::vector<uint64_t>& pending : pending_marks_) pending.resize(kWords);
  std::vector<uint32_t> moved;
  for (uint32_t w = 0; w < kWords; w++) {
    if (__atomic_load_n(&words[w], __ATOMIC_RELAXED) != 0) {
      const uint64_t marks = __atomic_exchange_n(&words[w], 0, __ATOMIC_SEQ_CST);
      for (std::vector<uint64_t>& pending : pending_marks_) pending[w] |= marks;
    }
    const uint64_t marks = std::exchange(pending_marks_[reader][w], 0);
    if (marks == 0) continue;
    unsigned char bytes[sizeof(uint64_t)];
    std::memcpy(bytes, &marks, sizeof(marks));
    for (uint32_t b = 0; b < sizeof(uint64_t); b++) {
      if (bytes[b]) moved.push_back(w * sizeof(uint64_t) + b);
    }
  }
  return moved;
}

std::vector<uint32_t> SchedProbe::TakeMovedSlots() { return TakeMarks(kCountsReader); }

std::optional<std::vector<uint64_t>> SchedProbe::TakeCgroupsThatRan() {
  // Overflows first: a switch that found no slot after this read is seen at the next call.
  const uint64_t overflows = stats_overflows();
  const bool known = traces_switches_ && ran_overflows_seen_ == overflows;
  ran_overflows_seen_ = overflows;
  std::vector<uint64_t> ran;
  // A slot's copies can count for two cgroups a moment (one forgotten, its slot taken again):
  // both are said.
  ForEachCopyOfSlots(TakeMarks(kRanReader), [&ran](uint32_t, int, const sched_cgroup_stats& c) {
    ran.push_back(c.cgroup);
  });
  const std::optional<std::map<uint64_t, int>> running = RunningIfKnown();
  if (!known || !running) return std::nullopt;
  for (const auto& [cgroup, cpus] : *running) ran.push_back(cgroup);
  std::sort(ran.begin(), ran.end());
  ran.erase(std::unique(ran.begin(), ran.end()), ran.end());
  return ran;
}

std::optional<sched_cgroup_stats> SchedProbe::ReadCgroup(uint64_t cgroup_id) const {
  uint32_t slot = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.sched_slots), &cgroup_id, &slot) != 0) {
    return std::nullopt;
  }
  // Only the CPUs whose copy of the slot counts for this cgroup (see ReadCgroups).
  std::optional<sched_cgroup_stats> sum = LookupPerCpu<uint32_t, sched_cgroup_stats>(
      bpf_map__fd(skel_->maps.sched_stats), slot,
      [cgroup_id](sched_cgroup_stats& total, const sched_cgroup_stats& copy) {
        if (copy.cgroup == cgroup_id) AddSchedCopy(total, copy);
      });
  if (!sum || sum->cgroup != cgroup_id) return std::nullopt;
  return sum;
}

std::optional<std::vector<uint64_t>> SchedProbe::ReadOncpuByCpu(uint64_t cgroup_id) const {
  uint32_t slot = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.sched_slots), &cgroup_id, &slot) != 0) {
    return std::nullopt;
  }
  std::vector<uint64_t> by_cpu;
  bool counted = false;
  // Only the CPUs whose copy of the slot counts for this cgroup (see ReadCgroups).
  if (!ForEachCpuCopyOf<uint32_t, sched_cgroup_stats>(
          bpf_map__fd(skel_->maps.sched_stats), slot,
          [&](int cpu, const sched_cgroup_stats& copy) {
            by_cpu.resize(std::max<size_t>(by_cpu.size(), cpu + 1));
            if (copy.cgroup != cgroup_id) return;
            by_cpu[cpu] = copy.oncpu_ns;
            counted = true;
          }) ||
      !counted) {
    return std::nullopt;
  }
  return by_cpu;
}

std::map<std::pair<uint64_t, uint64_t>, uint64_t> SchedProbe::ReadPreemptions() const {
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> out;
  for (const auto& [key, n] : ReadPreemptionEntries()) out[{key.preempted, key.preempting}] = n;
  return out;
}

std::vector<std::pair<sched_pair, uint64_t>> SchedProbe::ReadPreemptionEntries() const {
  return ReadPerCpuHash<sched_pair, uint64_t>(bpf_map__fd(skel_->maps.sched_preemptions),
                                              AddCount);
}

bool SchedProbe::TakePairsCounted() {
  uint8_t* mark = &skel_->bss->sched_pairs_counted;
  // A load first: a mark that stays clear (a quiet host) is never written here.
  const bool counted = __atomic_load_n(mark, __ATOMIC_RELAXED) != 0 &&
                       __atomic_exchange_n(mark, 0, __ATOMIC_SEQ_CST) != 0;
  return std::exchange(pairs_unread_, false) || counted;
}

std::map<uint64_t, int> SchedProbe::ReadRunning() const {
  return RunningIfKnown().value_or(std::map<uint64_t, int>{});
}

std::optional<std::map<uint64_t, int>> SchedProbe::RunningIfKnown() const {
  static const int cpus = libbpf_num_possible_cpus();
  std::vector<uint64_t> per_cpu(cpus);
  uint32_t zero = 0;
  const int map_fd = bpf_map__fd(skel_->maps.sched_cpu_cgroup);
  if (bpf_map_update_elem(map_fd, &zero, per_cpu.data(), BPF_ANY) != 0) return std::nullopt;
  const int prog_fd = bpf_program__fd(skel_->progs.sched_running_now);
  for (int cpu = 0; cpu < cpus; cpu++) {
    LIBBPF_OPTS(bpf_test_run_opts, run, .flags = BPF_F_TEST_RUN_ON_CPU,
                .cpu = static_cast<__u32>(cpu));
    // Offline CPUs refuse the run (ENXIO) and keep their zero.
    if (bpf_prog_test_run_opts(prog_fd, &run) != 0 && errno != ENXIO) return std::nullopt;
  }
  if (bpf_map_lookup_elem(map_fd, &zero, per_cpu.data()) != 0) return std::nullopt;
  std::map<uint64_t, int> out;
  for (uint64_t cgroup : per_cpu) {
    if (cgroup) out[cgroup]++;
  }
  return out;
}

void SchedProbe::Forget(const std::set<uint64_t>& cgroup_ids) {
  if (cgroup_ids.empty()) return;
  // Each one's slot, zeroed on every CPU, goes back on the free stack.
  const int slots = bpf_map__fd(skel_->maps.sched_slots);
  const std::vector<sched_cgroup_stats> zeros(libbpf_num_possible_cpus());
  for (uint64_t id : cgroup_ids) {
    uint32_t slot = 0;
    if (bpf_map_lookup_elem(slots, &id, &slot) != 0 || bpf_map_delete_elem(slots, &id) != 0) {
      continue;
    }
    bpf_map_update_elem(bpf_map__fd(skel_->maps.sched_stats), &slot, zeros.data(), BPF_ANY);
    bpf_map_update_elem(bpf_map__fd(skel_->maps.sched_free_slots), nullptr, &slot, BPF_ANY);
    slots_freed_++;
  }
  const int fd = bpf_map__fd(skel_->maps.sched_preemptions);
  for (const auto& [key, n] : ReadPerCpuHash<sched_pair, uint64_t>(fd, AddCount)) {
    if (cgroup_ids.contains(key.preempted) || cgroup_ids.contains(key.preempting)) {
      bpf_map_delete_elem(fd, &key);
    }
  }
}

uint64_t SchedProbe::stats_overflows() const {
  return __atomic_load_n(&skel_->bss->sched_stats_overflows, __ATOMIC_RELAXED);
}

uint64_t SchedProbe::slots_in_use() const {
  const uint64_t given = __atomic_load_n(&skel_->bss->sched_slots_given, __ATOMIC_RELAXED);
  const uint64_t freed = slots_freed_.load();
  return given > freed ? given - freed : 0;
}

uint64_t SchedProbe::pair_overflows() const {
  return __atomic_load_n(&skel_->bss->sched_pairs_overflows, __ATOMIC_RELAXED);
}

std::vector<ProgramStats> SchedProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch
