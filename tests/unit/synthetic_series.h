// Deterministic synthetic series for measuring the detectors: one value per second from t=0.
//
// Each generator models one behaviour a stage really shows (steady work, a leak, a sudden
// allocation, a training loop's periodic allocation, a start-up), so that detection delays
// and false-positive counts can be measured on known ground truth. Randomness comes from a
// seeded mt19937_64, whose output the standard fixes, and a hand-written Box-Muller: the
// std distributions differ between standard libraries, and the figures in docs/detectors.md
// must be reproducible.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <optional>
#include <random>
#include <vector>

#include "absl/time/time.h"
#include "detectors/detector.h"

namespace stagewatch::synth {

inline constexpr double kMiB = 1024.0 * 1024;
inline constexpr double kGiB = 1024.0 * kMiB;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  double Uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  bool Chance(double p) { return Uniform() < p; }

  double Gaussian() {
    if (spare_) {
      const double v = *spare_;
      spare_.reset();
      return v;
    }
    const double u1 = 1.0 - Uniform();  // (0, 1]: log stays finite
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * std::numbers::pi * u2);
    return r * std::cos(2 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
  std::optional<double> spare_;
};

using Series = std::vector<double>;  // value at second i

// ---- memory usage, bytes -----------------------------------------------------------------

inline Series Steady(size_t n, double level) { return Series(n, level); }

// Grows linearly at `rate` bytes/s from `start`.
inline Series SlowLeak(size_t n, double start, double rate) {
  Series s(n);
  for (size_t i = 0; i < n; ++i) s[i] = start + rate * static_cast<double>(i);
  return s;
}

// Adds `size` bytes over `ramp_s` seconds starting at second `at` (at + ramp_s is reached and
// kept): a sudden allocation.
inline Series& AddStep(Series& s, size_t at, double size, double ramp_s) {
  for (size_t i = at; i < s.size(); ++i) {
    s[i] += size * std::min(1.0, static_cast<double>(i - at + 1) / ramp_s);
  }
  return s;
}

// Adds `rate` bytes/s from second `at` on: a leak that starts suddenly.
inline Series& AddLeak(Series& s, size_t at, double rate) {
  for (size_t i = at; i < s.size(); ++i) s[i] += rate * static_cast<double>(i - at + 1);
  return s;
}

// A training loop: grows `amplitude` over `period_s` seconds, drops back, and again.
inline Series Sawtooth(size_t n, double base, double amplitude, size_t period_s) {
  Series s(n);
  for (size_t i = 0; i < n; ++i) {
    s[i] = base + amplitude * static_cast<double>(i % period_s) / static_cast<double>(period_s);
  }
  return s;
}

// A stage starting: 0 up to its working size over `ramp_s` seconds, then steady.
inline Series Startup(size_t n, double working, double ramp_s) {
  Series s(n);
  for (size_t i = 0; i < n; ++i) s[i] = working * std::min(1.0, static_cast<double>(i) / ramp_s);
  return s;
}

// Gaussian noise of `sd`, clipped at zero: usage is never negative.
inline Series& AddNoise(Series& s, Rng& rng, double sd) {
  for (double& v : s) v = std::max(0.0, v + sd * rng.Gaussian());
  return s;
}

// ---- cumulative counters -----------------------------------------------------------------

// Integrates per-second increments into a cumulative counter starting at 0.
inline Series Cumulate(const Series& per_second) {
  Series s(per_second.size());
  double total = 0;
  for (size_t i = 0; i < s.size(); ++i) s[i] = total += per_second[i];
  return s;
}

// Major faults per second: Poisson-like around `rate` (normal approximation), plus rare
// one-second bursts (a file mapped in, a binary paged in) of `burst_lo`..`burst_hi` faults.
inline Series FaultsPerSecond(size_t n, Rng& rng, double rate, double burst_chance, double burst_lo,
                              double burst_hi) {
  Series s(n);
  for (double& v : s) {
    v = std::max(0.0, std::round(rate + std::sqrt(rate) * rng.Gaussian()));
    if (rng.Chance(burst_chance)) v += std::round(rng.Uniform(burst_lo, burst_hi));
  }
  return s;
}

// Share of each second with all tasks stalled on memory (PSI "full"): `level` with Gaussian
// jitter of `sd`, plus rare one-second reclaim stalls of `stall_lo`..`stall_hi`.
inline Series StallPerSecond(size_t n, Rng& rng, double level, double sd, double stall_chance,
                             double stall_lo, double stall_hi) {
  Series s(n);
  for (double& v : s) {
    v = level + sd * rng.Gaussian();
    if (rng.Chance(stall_chance)) v += rng.Uniform(stall_lo, stall_hi);
    v = std::clamp(v, 0.0, 1.0);
  }
  return s;
}

// ---- gauges --------------------------------------------------------------------------------

// p99 run-queue latency per second, seconds: log-normal around `median` (latency is
// multiplicative noise), plus rare single-second spikes of `spike_lo`..`spike_hi`.
inline Series RunqueueP99(size_t n, Rng& rng, double median, double log_sd, double spike_chance,
                          double spike_lo, double spike_hi) {
  Series s(n);
  for (double& v : s) {
    v = median * std::exp(log_sd * rng.Gaussian());
    if (rng.Chance(spike_chance)) v = rng.Uniform(spike_lo, spike_hi);
  }
  return s;
}

// ---- feeding ---------------------------------------------------------------------------------

inline absl::Time SeriesStart() { return absl::FromUnixSeconds(1'700'000'000); }

inline Sample At(const Series& s, size_t i) {
  return Sample{SeriesStart() + absl::Seconds(static_cast<int64_t>(i)), s[i]};
}

}  // namespace stagewatch::synth
