// The clock the signals collect their trackers on: a cadence of the sampler's samples (sample
// hooks), so that a scrape reads only what was collected.
#pragma once

#include "absl/time/time.h"

namespace stagewatch {

// How often the signals collect their trackers on the sampler's clock. Folding every cgroup's
// map entries per stage each second was a quarter of an idle agent's CPU at 1,000 cgroups; the
// detectors that read them judge windows of 30 s, so a few seconds lose nothing
// (DetectorQualityTest at this cadence). Every third sample at the default 1 s interval (the
// half second absorbs the samples' jitter).
inline constexpr absl::Duration kCollectInterval = absl::Milliseconds(2500);

// How often the figures only a scrape reads (the memory tracker's faults and reclaim stalls,
// the task states) are collected: each collection at 1,000 cgroups costs a few ms, and
// collecting them at kCollectInterval cost an idle agent more than a 15 s scrape's reading
// them did; at twice the interval, about the same (bench/README.md, cgroup_scale).
inline constexpr absl::Duration kExpositionCollectInterval = absl::Milliseconds(5000);

// True at most once every `interval` of the times it is asked with.
class Cadence {
 public:
  explicit Cadence(absl::Duration interval) : interval_(interval) {}
  bool Due(absl::Time now) {
    if (now - last_ < interval_) return false;
    last_ = now;
    return true;
  }

 private:
  absl::Duration interval_;
  absl::Time last_ = absl::InfinitePast();
};

}  // namespace stagewatch
