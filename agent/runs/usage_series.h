// A run's memory and CPU use, sampled at an interval by the launcher: mean, p95 and time near
// the memory limit. Bounded: past `max_samples` every other kept sample is dropped, so a run of
// any length costs at most that many (the mean and near-limit time still count every sample).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/numa_stat.h"

namespace stagewatch {

struct UsageSummary {
  int samples = 0;
  std::optional<uint64_t> memory_mean_bytes;
  std::optional<uint64_t> memory_p95_bytes;
  std::optional<double> near_limit_seconds;
  std::optional<double> cpu_p95_cores;
  // Memory by NUMA node at the reading that held the most (CgroupFacts::memory_by_node).
  NumaMemory memory_by_node;
};

class UsageSeries {
 public:
  static constexpr size_t kMaxSamples = 4096;  // a launched run's
  UsageSeries(double near_limit_fraction, size_t max_samples = kMaxSamples)
      : near_limit_fraction_(near_limit_fraction), max_samples_(std::max<size_t>(max_samples, 2)) {}

  // A new bound (at least 2), kept from the next Add on: the kept samples are halved as often
  // as it takes, and their storage shrunk (thousands of discovered runs share a budget).
  void set_max_samples(size_t max_samples) { max_samples_ = std::max<size_t>(max_samples, 2); }

  // Where the CPU rate of the first reading counts from (the command's start), no sample itself:
  // memory at the very start would only pull the mean down.
  void SetBaseline(absl::Time at, std::optional<uint64_t> cpu_usage_ns) {
    last_at_ = at;
    last_cpu_ns_ = cpu_usage_ns;
  }
  // One reading at `at`: memory usage, its limit (none when unlimited) and cumulative CPU time.
  void Add(absl::Time at, uint64_t memory_bytes, std::optional<uint64_t> limit_bytes,
           std::optional<uint64_t> cpu_usage_ns);
  UsageSummary Summary() const;
  size_t kept() const { return kept_.size(); }
  size_t kept_capacity() const { return kept_.capacity(); }  // samples' room allocated

 private:
  struct Sample {  // 16 bytes: thousands of runs keep up to max_samples_ each
    double memory_bytes;
    double cores;  // since the previous reading; NaN when there is no rate
  };

  double near_limit_fraction_;
  size_t max_samples_;
  int samples_ = 0;
  size_t stride_ = 1;  // keep every stride_-th sample
  double memory_sum_ = 0;
  double near_limit_seconds_ = 0;
  std::vector<Sample> kept_;
  std::optional<absl::Time> last_at_;
  std::optional<uint64_t> last_cpu_ns_;
};

}  // namespace stagewatch
