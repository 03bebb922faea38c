#include "runs/usage_series.h"

#include <cmath>
#include <limits>

#include "runs/percentile.h"

namespace stagewatch {

void UsageSeries::Add(absl::Time at, uint64_t memory_bytes, std::optional<uint64_t> limit_bytes,
                      std::optional<uint64_t> cpu_usage_ns) {
  const double elapsed = last_at_ ? absl::ToDoubleSeconds(at - *last_at_) : 0;
  memory_sum_ += double(memory_bytes);
  if (limit_bytes && double(memory_bytes) >= near_limit_fraction_ * double(*limit_bytes)) {
    near_limit_seconds_ += elapsed;
  }
  Sample sample{double(memory_bytes), std::numeric_limits<double>::quiet_NaN()};
  if (cpu_usage_ns && last_cpu_ns_ && elapsed > 0 && *cpu_usage_ns >= *last_cpu_ns_) {
    sample.cores = double(*cpu_usage_ns - *last_cpu_ns_) / 1e9 / elapsed;
  }
  if (samples_ % stride_ == 0) {
    kept_.push_back(sample);
  }
  if (kept_.size() >= max_samples_) {
    // Halve: every other kept sample goes, and later ones are taken half as often.
    while (kept_.size() >= max_samples_) {
      size_t out = 0;
      for (size_t i = 0; i < kept_.size(); i += 2) kept_[out++] = kept_[i];
      kept_.resize(out);
      stride_ *= 2;
    }
    if (kept_.capacity() > max_samples_) kept_.shrink_to_fit();
  }
  ++samples_;
  last_at_ = at;
  last_cpu_ns_ = cpu_usage_ns;
}

UsageSummary UsageSeries::Summary() const {
  UsageSummary s;
  s.samples = samples_;
  if (samples_ == 0) return s;
  std::vector<double> memory, cores;
  for (const Sample& k : kept_) {
    memory.push_back(k.memory_bytes);
    if (!std::isnan(k.cores)) cores.push_back(k.cores);
  }
  s.memory_mean_bytes = static_cast<uint64_t>(memory_sum_ / samples_);
  s.memory_p95_bytes = static_cast<uint64_t>(Percentile(memory, 0.95));
  s.near_limit_seconds = near_limit_seconds_;
  if (!cores.empty()) s.cpu_p95_cores = Percentile(cores, 0.95);
  return s;
}

}  // namespace stagewatch
