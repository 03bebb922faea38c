// One thread per ring buffer, asleep in poll(2) until its ring has events or Stop() is
// called: an idle agent wakes for no ring at all (a timeout would wake every thread ten
// times a second for nothing).
#pragma once

#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "signals/signal.h"

namespace stagewatch {

class RingPollers {
 public:
  RingPollers() = default;
  ~RingPollers() { Stop(); }
  RingPollers(const RingPollers&) = delete;
  RingPollers& operator=(const RingPollers&) = delete;

  // Starts a thread (sw-ring-<probe>) for each ring.
  absl::Status Start(const std::vector<RingPoller>& rings);
  // Wakes every thread and joins them; each handles nothing more.
  void Stop();

 private:
  int stop_fd_ = -1;  // an eventfd, readable once Stop() has written it
  std::vector<std::thread> threads_;
};

}  // namespace stagewatch
