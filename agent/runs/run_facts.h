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
#include "cgroup/layout.h"
#include "runs/run_record.h"
#include "runs/usage_series.h"

namespace stagewatch {

// Reads peak, limit, failcnt, OOM kills, CPU and throttled time and PSI totals of the cgroup
// that `reader_layout` is rooted at (RunCgroup::reader_layout()). A file that cannot be read
// leaves its fact nullopt and adds a line to `problems`.
CgroupFacts ReadCgroupFacts(const CgroupLayout& reader_layout, std::vector<std::string>& problems);

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
  UsageSeries series_;
  SampleWriter write_;
  std::vector<RunSample> pending_;
  std::optional<RunSample> last_;         // the previous point, for rates
  std::optional<uint64_t> last_cpu_ns_;
  std::optional<uint64_t> last_psi_us_[2];  // memory, cpu "some" totals
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Adds the sampled figures to facts read at the end.
void MergeUsage(const UsageSummary& usage, CgroupFacts& facts);

}  // namespace stagewatch
