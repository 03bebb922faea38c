#include "memory/memory_sampler.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "cgroup/psi.h"

namespace stagewatch {

MemoryReader CgroupfsMemoryReader(const CgroupLayout& layout) {
  return {
      .stats = [layout](const std::string& path) { return ReadMemoryStats(layout, path); },
      .limit = [layout](const std::string& path) { return ReadMemoryLimit(layout, path); },
  };
}

MemorySampler::MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config,
                             std::optional<MemoryReader> reader)
    : namer_(namer),
      layout_(std::move(layout)),
      config_(config),
      reader_(reader ? std::move(*reader) : CgroupfsMemoryReader(layout_)),
      events_(kMemoryEvents.size()) {}

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

// The stage tops first (always tracked: their hierarchical usage is the stage's), then every
// other cgroup of a stage with a limit of its own, up to memory.max_limit_domains in all.
std::vector<std::pair<uint64_t, MemorySampler::Domain>> MemorySampler::ReadDomains() {
  std::vector<std::pair<uint64_t, Domain>> domains;
  auto add = [&](const NamedCgroup& c, bool top) {
    absl::StatusOr<MemoryCgroupStats> m = reader_.stats(c.path);
    if (!m.ok()) {
      // Removed since the walk, or a file that does not parse: this domain sits the sample
      // out, the others go on.
      skips_++;
      return;
    }
    std::optional<uint64_t> limit = LowerLimit(m->limit_bytes, m->high_bytes);
    domains.push_back({c.id, Domain{c.stage.name, top, std::move(*m), limit}});
  };
  absl::flat_hash_set<uint64_t> tops;
  for (const NamedCgroup& top : namer_->StageTops()) {
    tops.insert(top.id);
    add(top, true);
  }
  const size_t max = static_cast<size_t>(config_.max_limit_domains);
  size_t room = max > tops.size() ? max - tops.size() : 0;
  for (const NamedCgroup& c : namer_->Live()) {
    if (c.stage.name == kUnattributedStage || tops.contains(c.id)) continue;
    absl::StatusOr<std::optional<uint64_t>> limit = reader_.limit(c.path);
    if (!limit.ok()) {
      skips_++;
      continue;
    }
    if (!limit->has_value()) continue;
    if (room == 0) {
      overflows_++;
      continue;
    }
    room--;
    add(c, false);
  }
  return domains;
}

void MemorySampler::SampleOnce(absl::Time now) {
  namer_->Refresh();
  const std::vector<std::pair<uint64_t, Domain>> domains = ReadDomains();
  // PSI is read outside the lock, from the tops (it is hierarchical).
  std::map<std::string, std::optional<double>> psi;
  for (const NamedCgroup& top : namer_->StageTops()) {
    if (absl::StatusOr<PsiTotals> p = ReadPsi(layout_, top.path, "memory"); p.ok()) {
      psi[top.stage.name] = psi[top.stage.name].value_or(0) + p->full_us.value_or(0) * 1e-6;
    }
  }
  Fold(now, domains);
  absl::MutexLock lock(&mu_);
  for (auto& [stage, m] : stages_) {
    auto it = psi.find(stage);
    m.psi_full_seconds = it == psi.end() ? std::nullopt : it->second;
  }
}

void MemorySampler::Fold(absl::Time now, const std::vector<std::pair<uint64_t, Domain>>& domains) {
  struct Sum {
    uint64_t usage = 0, working_set = 0, swap = 0, kernel_peak = 0;
    bool has_swap = false, near = false;
    int tops = 0;
    size_t domains = 0;
    const Domain* closest = nullptr;  // highest usage / limit
    double closest_fraction = -1;
  };
  std::map<std::string, Sum> sums;
  std::vector<CgroupCounterSample> event_samples;
  // v2 memory.events are hierarchical: the tops' count each event once. v1 keeps failcnt and
  // oom_kill per cgroup: every domain's own count is added.
  const bool hierarchical_events = layout_.key == CGROUP_KEY_DEFAULT;
  for (const auto& [id, d] : domains) {
    Sum& s = sums[d.stage];
    const MemoryCgroupStats& m = d.stats;
    s.domains++;
    if (d.top) {
      s.usage += m.usage_bytes;
      s.working_set += m.working_set_bytes;
      s.has_swap |= m.swap_bytes.has_value();
      s.swap += m.swap_bytes.value_or(0);
      s.kernel_peak = std::max(s.kernel_peak, m.peak_bytes.value_or(0));
      s.tops++;
    }
    if (d.limit) {
      const double fraction =
          static_cast<double>(m.usage_bytes) / static_cast<double>(std::max<uint64_t>(*d.limit, 1));
      s.near |= fraction >= config_.near_limit_fraction;
      if (fraction > s.closest_fraction) {
        s.closest_fraction = fraction;
        s.closest = &d;
      }
    }
    if (d.top || !hierarchical_events) {
      std::vector<uint64_t> values;
      for (const char* e : kMemoryEvents) {
        auto it = m.events.find(e);
        values.push_back(it == m.events.end() ? 0 : it->second);
      }
      event_samples.push_back({id, d.stage, std::move(values)});
    }
  }

  const absl::flat_hash_set<std::string> known = namer_->stages()->KnownStageNames();
  absl::MutexLock lock(&mu_);
  events_.Update(event_samples);
  events_.KeepStages(known);
  const auto event_totals = events_.Totals();
  // A forgotten stage's peak and near-limit time start again if it comes back.
  std::erase_if(stages_, [&known](const auto& entry) { return !known.contains(entry.first); });
  for (const auto& [stage, s] : sums) {
    if (s.tops == 0) continue;  // its top vanished mid-sample: keep the last sample
    StageMemory& m = stages_[stage];
    // The interval since the last sample counts as near the limit if that sample was.
    if (m.near_limit && m.sampled_at != absl::InfinitePast()) {
      m.near_limit_seconds += absl::ToDoubleSeconds(now - m.sampled_at);
    }
    m.near_limit = s.near;
    m.usage_bytes = s.usage;
    m.working_set_bytes = s.working_set;
    m.swap_bytes = s.has_swap ? std::optional<uint64_t>(s.swap) : std::nullopt;
    m.limit_bytes = std::nullopt;
    m.headroom_bytes = std::nullopt;
    m.limit_working_set_bytes = std::nullopt;
    if (s.closest) {
      const uint64_t limit = *s.closest->limit, usage = s.closest->stats.usage_bytes;
      m.limit_bytes = limit;
      m.headroom_bytes = usage < limit ? limit - usage : 0;
      m.limit_working_set_bytes = s.closest->stats.working_set_bytes;
    }
    m.limit_domains = s.domains;
    // A single cgroup's own high-water mark also catches spikes between samples.
    m.peak_bytes = std::max({m.peak_bytes, s.usage, s.tops == 1 ? s.kernel_peak : 0});
    if (auto it = event_totals.find(stage); it != event_totals.end()) m.events = it->second;
    m.sampled_at = now;
  }
}

std::map<std::string, StageMemory> MemorySampler::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return stages_;
}

}  // namespace stagewatch
