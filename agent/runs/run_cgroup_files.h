// The cgroupfs figures of a run the agent samples itself, read through the cgroup readers
// (cgroup/memory_stats.h, cpu_stats.h, cpu_limits.h, psi.h) and the discovered-run sampler's
// cache of open files (cgroup/open_cgroup_files.h): those read at every sample are kept open
// and re-read at offset 0, so that they cost a pread rather than an open, a read and a close.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "cgroup/numa_stat.h"
#include "cgroup/open_cgroup_files.h"
#include "runs/run_facts.h"
#include "runs/run_record.h"

namespace stagewatch {

// Everything one sample read: the series' figures and the totals the run's end facts use.
struct RunCgroupReading {
  CgroupReading usage;
  std::optional<uint64_t> memory_peak_bytes;  // v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> memory_failcnt;     // v1 memory.failcnt, v2 memory.events max
  CpuCgroupStats cpu;
  NumaMemory memory_by_node;  // empty without memory.numa_stat
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

// The limits of the cgroup at `cgroup_path` in the keyed hierarchy (and its cpu mirror), read
// once: for a discovered run when the agent records it.
RunLimits ReadRunLimits(const CgroupLayout& layout, const std::string& cgroup_path);

class RunCgroupFiles {
 public:
  // The files of the cgroup at `cgroup_path` in the keyed hierarchy, and of the same path in
  // the cpu, cpuacct and cgroup2 (PSI) hierarchies of a v1 or hybrid host. Only its memory
  // usage and CPU time files, read at every sample, are kept open in `open_files` (shared by
  // every run's, and bounded: the rest are opened for each read); it outlives this.
  RunCgroupFiles(const CgroupLayout& layout, const std::string& cgroup_path,
                 OpenCgroupFiles* open_files);
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
  // What the run knows of one of its files besides its descriptor: whether it is still
  // looked for. By id, not path: thousands of runs each hold a dozen.
  struct File {
    File(OpenCgroupFiles* cache, uint32_t id) : file(cache), id(id) {}
    OpenCgroupFiles::File file;
    uint32_t id;  // open_files_->file_ids()
    uint8_t attempts = 0;
    bool gone = false;  // given up on
    absl::Time first_miss = absl::InfiniteFuture();
  };
  class Reading;

  // The file at `path` (as a reader names it), or why not: FailedPrecondition once given up on.
  absl::StatusOr<std::string> FileText(const std::string& path, bool keep, absl::Time now);
  RunLimits ReadLimits(Reading& reading);
  std::optional<uint64_t> ReadMemoryMax(Reading& reading);
  // The text of the CPU time file the idle check compares (v2 cpu.stat, v1 cpuacct.usage),
  // nullopt when unreadable.
  std::optional<std::string> ReadCpuTime(Reading& reading);

  const CgroupLayout& layout_;
  std::string cgroup_path_;
  bool v2_;
  OpenCgroupFiles* open_files_;
  std::vector<File> files_;  // each once a reader asked for it; a dozen at most: no index
  std::optional<double> cfs_period_;
  bool period_read_ = false;
  std::optional<RunLimits> limits_;
  int readings_ = 0;  // full readings
  std::optional<RunCgroupReading> last_full_;
  std::optional<std::string> last_cpu_time_;  // the file's text at that reading
  int since_full_ = 0;                        // idle readings since it
};

}  // namespace stagewatch
