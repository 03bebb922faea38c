// The clock the signals collect their trackers on: a cadence of the sampler's samples (sample
// hooks), so that a scrape reads only what was collected.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
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

// For figures only a scrape reads: collected about one `interval` before the scrape that will
// read them, on the period of the scrapes told so far (the gap between the last two), so a
// 15 s scrape gets one collection at most `interval` old, not three. Until two scrapes were
// told, and once they stop (a period late), every `interval`, as Cadence. Due() is asked on the
// sampler's thread, Scraped() told from the scrapes'.
class ScrapeCadence {
 public:
  explicit ScrapeCadence(absl::Duration interval) : interval_(interval) {}
  void Scraped(absl::Time at) {
    absl::MutexLock lock(&mu_);
    if (last_scrape_ != absl::InfinitePast()) period_ = at - last_scrape_;
    last_scrape_ = at;
  }
  bool Due(absl::Time now) {
    if (now - last_ < interval_) return false;
    {
      absl::MutexLock lock(&mu_);
      if (now - last_scrape_ < period_ - interval_) return false;
    }
    last_ = now;
    return true;
  }

 private:
  const absl::Duration interval_;
  absl::Time last_ = absl::InfinitePast();
  absl::Mutex mu_;
  absl::Time last_scrape_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration period_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace stagewatch
