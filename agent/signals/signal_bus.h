// The events signals hand one another, by topic, never by signal: the lifecycle probe's cgroup
// events, the OOM probe's kills and the anomaly engine's changes reach whoever subscribed (the
// run watcher), without either side naming the other.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "anomaly/anomaly_engine.h"
#include "bpf/lifecycle.h"
#include "runs/run_record.h"

namespace stagewatch {

// An OOM kill as the signals that are not the OOM probe's see it.
struct OomKill {
  uint64_t victim_cgroup_id;  // the keyed hierarchy's id
  OomVictim victim;
};

// Thread-safe: events come from the probes' poll threads and the sampler's; subscriptions are
// made while the signals start, and all dropped by Close() before the subscribers stop.
class SignalBus {
 public:
  struct Subscriber {
    // A cgroup made or removed, or a populated flip, before the path cache applies it (an
    // rmdir's probe entries are still there).
    std::function<void(const cgroup_event&)> cgroup_event;
    std::function<void()> cgroup_events_lost;  // the hierarchy is walked again
    std::function<void(const OomKill&)> oom_kill;
    std::function<void(const AnomalyChange&)> anomaly;
  };

  void Subscribe(Subscriber subscriber);
  void Close();  // no handler runs after it returns

  void PublishCgroupEvent(const cgroup_event& event) const;
  void PublishCgroupEventsLost() const;
  void PublishOomKill(const OomKill& kill) const;
  void PublishAnomaly(const AnomalyChange& change) const;

 private:
  template <typename Handler, typename... Args>
  void Publish(Handler Subscriber::*handler, const Args&... args) const;

  mutable absl::Mutex mu_;
  std::vector<Subscriber> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
