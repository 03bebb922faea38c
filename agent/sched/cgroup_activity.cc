#include "sched/cgroup_activity.h"

namespace stagewatch {

bool ActivityGate::Due(uint64_t key, absl::Span<const uint64_t> ids, const ActivityLook* look,
                       absl::Time now) {
  if (!look) {
    seen_.erase(key);
    return true;
  }
  uint64_t sum = 0;
  bool running = false;
  for (uint64_t id : ids) {
    if (auto it = look->counters.find(id); it != look->counters.end()) sum += it->second;
    running = running || look->running.contains(id);
  }
  auto it = seen_.find(key);
  const bool due = it == seen_.end() || running || it->second.sum != sum ||
                   it->second.refused != look->refused || now - it->second.read_at >= floor_;
  if (due) seen_[key] = {.sum = sum, .refused = look->refused, .read_at = now};
  return due;
}

void ActivityGate::Retain(const std::function<bool(uint64_t)>& keep) {
  absl::erase_if(seen_, [&keep](const auto& entry) { return !keep(entry.first); });
}

}  // namespace stagewatch
