// The cgroupfs files of a run the agent samples itself, kept open and re-read at offset 0 (a
// cgroupfs file gives its current value on every read from the start), so that a sample costs
// one pread per file rather than an open, a read and a close.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "runs/run_facts.h"

namespace stagewatch {

// Everything one sample read: the series' figures and the totals the run's end facts use.
struct RunCgroupReading {
  CgroupReading usage;
  std::optional<uint64_t> memory_peak_bytes;  // v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> memory_failcnt;     // v1 memory.failcnt, v2 memory.events max
  CpuCgroupStats cpu;
  int reads = 0;  // files read
};

// Shared by every run's files: how many descriptors may stay open at once (the rest are
// opened for each read), so that thousands of runs never exhaust the agent's descriptors.
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
  std::optional<RunCgroupReading> Read(absl::Time now);
  // The CFS period, read once the cpu files are found.
  std::optional<double> cfs_period_seconds() const { return cfs_period_; }

  static constexpr int kOpenAttempts = 5;
  static constexpr absl::Duration kOpenWindow = absl::Seconds(5);

 private:
  enum Slot { kUsage, kLimit, kPeak, kFailcnt, kCpuUsage, kCpuStat, kMemoryPsi, kCpuPsi, kSlots };
  struct File {
    std::string path;  // "" when the host has no such hierarchy
    int fd = -1;
    int attempts = 0;
    absl::Time first_miss = absl::InfiniteFuture();
    bool gone = false;  // given up on
  };
  // The file's contents, or nullopt.
  std::optional<std::string> ReadSlot(Slot slot, absl::Time now);

  const CgroupLayout& layout_;
  std::string cgroup_path_;
  bool v2_;
  OpenFileBudget* budget_;
  File files_[kSlots];
  std::optional<double> cfs_period_;
  bool period_read_ = false;
};

}  // namespace stagewatch
