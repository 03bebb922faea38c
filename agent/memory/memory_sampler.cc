#include "memory/memory_sampler.h"

#include <algorithm>

#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"

namespace stagewatch {

MemorySampler::MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config)
    : namer_(namer), layout_(std::move(layout)), config_(config) {}

MemorySampler::~MemorySampler() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void MemorySampler::Start(Observer observer) {
  observer_ = std::move(observer);
  thread_ = std::thread([this] {
    do {
      const absl::Time now = absl::Now();
      SampleOnce(now);
      if (observer_) observer_(now, Snapshot());
    } while (!stop_.WaitForNotificationWithTimeout(config_.sample_interval));
  });
}

void MemorySampler::SampleOnce(absl::Time now) {
  namer_->Refresh();
  struct Sum {
    uint64_t usage = 0, working_set = 0, limit = 0, kernel_peak = 0, psi_full_us = 0;
    int cgroups = 0;
    bool unlimited = false, psi = false;
  };
  std::map<std::string, Sum> sums;
  for (const NamedCgroup& top : namer_->StageTops()) {
    absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(layout_, top.path);
    if (!m.ok()) continue;  // removed since the walk
    Sum& s = sums[top.stage.name];
    s.usage += m->usage_bytes;
    s.working_set += m->working_set_bytes;
    if (absl::StatusOr<PsiTotals> psi = ReadPsi(layout_, top.path, "memory"); psi.ok()) {
      s.psi = true;
      s.psi_full_us += psi->full_us.value_or(0);
    }
    s.unlimited |= !m->limit_bytes.has_value();
    s.limit += m->limit_bytes.value_or(0);
    s.kernel_peak = std::max(s.kernel_peak, m->peak_bytes.value_or(0));
    s.cgroups++;
  }

  const absl::flat_hash_set<std::string> known = namer_->stages()->KnownStageNames();
  absl::MutexLock lock(&mu_);
  // A forgotten stage's peak and near-limit time start again if it comes back.
  std::erase_if(stages_, [&known](const auto& entry) { return !known.contains(entry.first); });
  for (const auto& [stage, s] : sums) {
    StageMemory& m = stages_[stage];
    // The interval since the last sample counts as near the limit if that sample was.
    const bool was_near = m.limit_bytes && m.sampled_at != absl::InfinitePast() &&
                          m.usage_bytes >= config_.near_limit_fraction * *m.limit_bytes;
    if (was_near) m.near_limit_seconds += absl::ToDoubleSeconds(now - m.sampled_at);
    m.usage_bytes = s.usage;
    m.working_set_bytes = s.working_set;
    m.psi_full_seconds = s.psi ? std::optional<double>(s.psi_full_us * 1e-6) : std::nullopt;
    m.limit_bytes = s.unlimited ? std::nullopt : std::optional<uint64_t>(s.limit);
    // A single cgroup's own high-water mark also catches spikes between samples.
    m.peak_bytes = std::max({m.peak_bytes, s.usage, s.cgroups == 1 ? s.kernel_peak : 0});
    m.sampled_at = now;
  }
}

std::map<std::string, StageMemory> MemorySampler::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return stages_;
}

}  // namespace stagewatch
