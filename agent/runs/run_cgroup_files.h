// The cgroupfs files of a run the agent samples itself. Those read at every sample are kept
// open and re-read at offset 0 (a cgroupfs file gives its current value on every read from the
// start), so that they cost a pread rather than an open, a read and a close.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "runs/run_facts.h"
#include "runs/run_record.h"

namespace stagewatch {

// Everything one sample read: the series' figures and the totals the run's end facts use.
struct RunCgroupReading {
  CgroupReading usage;
  std::optional<uint64_t> memory_peak_bytes;  // v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> memory_failcnt;     // v1 memory.failcnt, v2 memory.events max
  CpuCgroupStats cpu;
  int reads = 0;  // files read
};

// A run's memory as the memory sampler read it, where its cgroup is a limit domain in the
// latest snapshot (memory/sample_snapshot.h DomainMemory): these files are then not read again.
// Usage is of that sample; the others may be up to kFullReadEvery samples older (the sampler
// re-reads them when usage moved). Its limits are not among them: those the run reads itself.
struct SampledMemory {
  uint64_t usage_bytes = 0;
  std::optional<uint64_t> peak_bytes;  // v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> failcnt;     // v1 memory.failcnt, v2 memory.events max
};

// The limits of a cgroup from its files' contents. Each is nullopt when unlimited or at the
// kernel's default, as a launcher run without that flag.
// memory.high (v2) or memory.soft_limit_in_bytes (v1, the nearest v1 has): "max" or v1's
// PAGE_COUNTER_MAX mean none.
std::optional<uint64_t> SoftLimitOf(std::string_view text, bool v2);
// The CPUs a CFS quota allows: v2 cpu.max "QUOTA PERIOD" (both in `quota`, `period` unused),
// v1 cpu.cfs_quota_us and cpu.cfs_period_us. "max" or -1 mean none.
std::optional<double> CpuMaxCoresOf(std::string_view quota, std::string_view period, bool v2);
// v2 cpu.weight, or v1 cpu.shares as a weight (1024 shares are weight 100, as systemd converts
// them). The default (100, 1024 shares) is none.
std::optional<uint32_t> CpuWeightOf(std::string_view text, bool v2);

// The limits of the cgroup at `cgroup_path` in the keyed hierarchy (and its cpu mirror), read
// once: for a discovered run when the agent records it.
RunLimits ReadRunLimits(const CgroupLayout& layout, const std::string& cgroup_path);

// Shared by every run's files: how many descriptors may stay open at once (the rest are
// opened for each read), so that thousands of runs never exhaust the agent's descriptors.
// Only a run's memory usage and CPU time files, read at every sample, are kept open.
struct OpenFileBudget {
  int left = 0;
};

class RunCgroupFiles {
 public:
  // The files of the cgroup at `cgroup_path` in the keyed hierarchy, and of the same path in
  // the cpu, cpuacct and cgroup2 (PSI) hierarchies of a v1 or hybrid host.
  RunCgroupFiles(const CgroupLayout& layout, const std::string& cgroup_path,
                 OpenFileBudget* budget);
  ~RunCgroupFiles();
  RunCgroupFiles(const RunCgroupFiles&) = delete;
  RunCgroupFiles& operator=(const RunCgroupFiles&) = delete;

  // Reads every file there is. A file missing at its first read is looked for again for
  // kOpenWindow, at most kOpenAttempts times (a mirror hierarchy's directory is often made a
  // moment after the keyed one), then given up on: with thousands of runs each is read only
  // every few seconds, and a failed cgroupfs lookup costs more than a read. Without memory
  // usage the cgroup is gone: nullopt.
  // An idle run costs one or two reads: while its memory usage and CPU time (v1 cpuacct.usage,
  // v2 cpu.stat) are as at the last full reading, the rest is taken as then, for at most
  // kFullReadEvery - 1 readings in a row (what moves without either, a limit written or PSI
  // of a task that never ran, shows that much later).
  // With `sampled`, the memory files it holds are not read; memory-max is read with the other
  // limits then (the sampler's may be kFullReadEvery samples old, and a job scheduler resizes
  // a job without its usage moving). Whether the
  // cgroup is gone is then told by a file still read: on v2 its cpu.stat, which every cgroup2
  // directory has beside its memory files; on v1, whose cpu mirror may never exist, its
  // memory.failcnt, kept for that (and fresher than the sampler's: it moves while usage sits
  // at the limit, when the sampler re-reads least).
  std::optional<RunCgroupReading> Read(absl::Time now, const SampledMemory* sampled = nullptr);
  // The CFS period, read once the cpu files are found.
  std::optional<double> cfs_period_seconds() const { return cfs_period_; }
  // The limits as of the last full reading: memory-max at each (with `sampled`, with the
  // others), the others at the first and then every kLimitsEvery-th (they seldom change, and a
  // sample's reads are budgeted). nullopt before the first Read() that found the cgroup.
  const std::optional<RunLimits>& limits() const { return limits_; }
  // Reads memory.high, the CFS quota and the weight now (not memory-max); adds the files read
  // to `reads`.
  RunLimits ReadLimits(absl::Time now, int* reads = nullptr);
  // Reads the memory limit now (nullopt when unlimited or unreadable); adds to `reads`.
  std::optional<uint64_t> ReadMemoryMax(absl::Time now, int* reads = nullptr);

  static constexpr int kOpenAttempts = 5;
  static constexpr absl::Duration kOpenWindow = absl::Seconds(5);
  static constexpr int kLimitsEvery = 4;  // full readings
  static constexpr int kFullReadEvery = 10;

 private:
  enum Slot {
    kUsage, kLimit, kPeak, kFailcnt, kCpuUsage, kCpuStat, kMemoryPsi, kCpuPsi,
    kMemoryHigh, kCpuQuota, kCpuPeriod, kCpuWeight, kSlots
  };
  struct File {
    std::string path;  // "" when the host has no such hierarchy
    int fd = -1;
    int attempts = 0;
    absl::Time first_miss = absl::InfiniteFuture();
    bool gone = false;  // given up on
  };
  // The file's contents, or nullopt.
  std::optional<std::string> ReadSlot(Slot slot, absl::Time now);
  // A single number (usage, peak, v1 failcnt), or nullopt.
  std::optional<uint64_t> ReadNumber(Slot slot, absl::Time now, int* reads);
  // v1 memory.failcnt, v2 the "max" count of memory.events: nullopt when unreadable, and a
  // value of nullopt when it does not parse.
  std::optional<std::optional<uint64_t>> ReadFailcnt(absl::Time now, int* reads);

  const CgroupLayout& layout_;
  std::string cgroup_path_;
  bool v2_;
  OpenFileBudget* budget_;
  File files_[kSlots];
  std::optional<double> cfs_period_;
  bool period_read_ = false;
  std::optional<RunLimits> limits_;
  int readings_ = 0;  // full readings
  std::optional<RunCgroupReading> last_full_;
  std::optional<std::string> last_cpu_time_;  // the file's text at that reading
  int since_full_ = 0;                        // idle readings since it
};

}  // namespace stagewatch
