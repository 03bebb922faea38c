// What the launcher measures itself from the run's cgroup files: a sampling thread while the
// command runs, and the kernel's own totals read once at the end, before the cgroup goes.
#pragma once

#include <condition_variable>
#include <functional>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "runs/run_record.h"
#include "runs/usage_series.h"

namespace stagewatch {

// Reads peak, limit, failcnt, OOM kills, CPU and throttled time and PSI totals of the cgroup
// that `reader_layout` is rooted at (RunCgroup::reader_layout()). A file that cannot be read
// leaves its fact nullopt and adds a line to `problems`.
CgroupFacts ReadCgroupFacts(const CgroupLayout& reader_layout, std::vector<std::string>& problems);

// Fills the CPU facts (seconds, throttled seconds, the wall time throttling held back) from
// cpu.stat figures and the cgroup's CFS period.
void SetCpuFacts(const CpuCgroupStats& cpu, std::optional<double> period_seconds,
                 CgroupFacts& facts);

// One reading of a run's cgroup files at `at`. A figure not read is nullopt.
struct CgroupReading {
  absl::Time at;
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> memory_limit_bytes;  // none when unlimited
  std::optional<uint64_t> cpu_ns;              // cumulative
  std::optional<uint64_t> psi_some_us[2];      // memory, cpu "some" totals
};

// Turns a run's readings into its usage summary and the points of its time series: the one
// place both the launcher's sampler and the agent's discovered-run sampler sum them.
class RunUsage {
 public:
  explicit RunUsage(double near_limit_fraction) : series_(near_limit_fraction) {}
  // Where the rates of the first reading count from (the command's start), no point itself.
  void SetBaseline(absl::Time at, std::optional<uint64_t> cpu_ns);
  // Adds a reading with memory_bytes set; returns its point, with rates since the last one.
  RunSample Add(const CgroupReading& reading);
  UsageSummary Summary() const { return series_.Summary(); }
  void set_max_samples(size_t n) { series_.set_max_samples(n); }  // the series' bound
  size_t kept() const { return series_.kept(); }

 private:
  UsageSeries series_;
  std::optional<CgroupReading> last_;
};

// Samples memory usage and CPU time every `interval` on its own thread. Each point also goes
// to `write` (the ledger's time series) in batches of kBatch, and the rest at Stop().
class RunSampler {
 public:
  using SampleWriter = std::function<void(const std::vector<RunSample>&)>;
  static constexpr size_t kBatch = 5;
  RunSampler(CgroupLayout reader_layout, absl::Duration interval, double near_limit_fraction,
             SampleWriter write = nullptr);
  ~RunSampler();  // stops
  RunSampler(const RunSampler&) = delete;
  RunSampler& operator=(const RunSampler&) = delete;

  UsageSummary Stop();

 private:
  void Loop();
  void SampleOnce();

  CgroupLayout layout_;
  absl::Duration interval_;
  RunUsage usage_;
  NumaMemory memory_by_node_peak_;
  SampleWriter write_;
  std::vector<RunSample> pending_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Adds the sampled figures to facts read at the end.
void MergeUsage(const UsageSummary& usage, CgroupFacts& facts);

}  // namespace stagewatch
