// The agent samples the runs no launcher started (discovered runs) as the launcher samples its
// own: memory usage against the limit, CPU time and PSI totals, for the same mean, p95,
// near-limit seconds, CPU seconds, throttling and time series. Bounded for hosts with
// thousands of them: at most `reads_per_second` cgroup file reads a second, spread round-robin
// over the open runs (each at most every `interval`), with files kept open.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/layout.h"
#include "runs/run_cgroup_files.h"
#include "runs/run_facts.h"
#include "runs/run_record.h"

namespace stagewatch {

struct DiscoveredSamplerOptions {
  CgroupLayout layout;
  absl::Duration interval = absl::Seconds(1);  // memory.sample_interval
  double near_limit_fraction = 0.9;            // memory.near_limit_fraction
  int reads_per_second = 200;                  // runs.sample_reads_per_second
};

// Not thread-safe: the run watcher's thread calls it.
class DiscoveredSampler {
 public:
  explicit DiscoveredSampler(DiscoveredSamplerOptions options);

  void Add(const std::string& run_id, const std::string& cgroup_path, absl::Time now);
  // Samples the runs whose turn it is, within the reads accrued since the last call (at most
  // a second's worth).
  void Sample(absl::Time now);
  // The points sampled since the last call, by run: written to the ledger in one transaction.
  std::map<std::string, std::vector<RunSample>> TakePoints();
  // Stops sampling the run. Its facts as of its last sample (nullopt if it never got one),
  // and in `points` its points not taken yet.
  std::optional<CgroupFacts> Remove(const std::string& run_id, std::vector<RunSample>& points);

  size_t runs() const { return runs_.size(); }
  uint64_t reads() const { return reads_; }  // file reads so far

 private:
  struct Sampled {
    std::unique_ptr<RunCgroupFiles> files;
    RunUsage usage;
    std::optional<RunCgroupReading> last;
    absl::Time next;  // due at
    std::vector<RunSample> points;
  };

  const DiscoveredSamplerOptions options_;
  OpenFileBudget open_files_;
  std::map<std::string, Sampled> runs_;
  std::deque<std::string> turn_;  // round-robin order of run ids
  double credit_ = 0;             // reads that may be made now
  std::optional<absl::Time> last_sample_;
  uint64_t reads_ = 0;
};

}  // namespace stagewatch
