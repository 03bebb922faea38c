#include "signals/sched/preemption_reads.h"

#include <time.h>

namespace stagewatch {
namespace {

uint64_t MonotonicNowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

std::map<uint64_t, uint64_t> PreemptionReads::Of(const std::set<uint64_t>& ids,
                                                 uint64_t settled_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!taken_ || taken_ns_ < settled_ns) {
    taken_ns_ = MonotonicNowNs();
    last_ = sched_->ReadPreemptions();
    taken_ = true;
    reads_++;
  }
  std::map<uint64_t, uint64_t> by_preempting;
  // The pairs are ordered by the preempted cgroup: each of `ids` is one range.
  for (uint64_t id : ids) {
    for (auto it = last_.lower_bound({id, 0}); it != last_.end() && it->first.first == id; ++it) {
      by_preempting[it->first.second] += it->second;
    }
  }
  return by_preempting;
}

uint64_t PreemptionReads::reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reads_;
}

}  // namespace stagewatch
