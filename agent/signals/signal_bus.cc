#include "signals/signal_bus.h"

namespace stagewatch {

void SignalBus::Subscribe(Subscriber subscriber) {
  absl::MutexLock lock(&mu_);
  subscribers_.push_back(std::move(subscriber));
}

void SignalBus::Close() {
  absl::MutexLock lock(&mu_);  // waits for the handlers running now
  subscribers_.clear();
}

template <typename Handler, typename... Args>
void SignalBus::Publish(Handler Subscriber::*handler, const Args&... args) const {
  // Shared: the poll threads publish at once; a handler only queues or counts.
  absl::ReaderMutexLock lock(&mu_);
  for (const Subscriber& s : subscribers_) {
    if (s.*handler) (s.*handler)(args...);
  }
}

void SignalBus::PublishCgroupEvent(const cgroup_event& event) const {
  Publish(&Subscriber::cgroup_event, event);
}
void SignalBus::PublishCgroupEventsLost() const { Publish(&Subscriber::cgroup_events_lost); }
void SignalBus::PublishOomKill(const OomKill& kill) const { Publish(&Subscriber::oom_kill, kill); }
void SignalBus::PublishAnomaly(const AnomalyChange& change) const {
  Publish(&Subscriber::anomaly, change);
}

}  // namespace stagewatch
