#include "anomaly/anomaly_engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bpf/histogram.h"

namespace stagewatch {

const char* AnomalyRuleName(AnomalyRule rule) {
  switch (rule) {
    case AnomalyRule::kMemoryClimb: return "memory_climb";
    case AnomalyRule::kLimitEta: return "limit_eta";
    case AnomalyRule::kPressureSpike: return "pressure_spike";
    case AnomalyRule::kFaultStorm: return "fault_storm";
    case AnomalyRule::kCpuStarvation: return "cpu_starvation";
    case AnomalyRule::kOomKill: return "oom_kill";
    case AnomalyRule::kSlowRun: return "slow_run";
  }
  return "unknown";
}

namespace {

// What each slot gained between two cumulative histograms (a slot that went down gained 0).
std::vector<uint64_t> Added(const std::vector<uint64_t>& older,
                            const std::vector<uint64_t>& newer) {
  std::vector<uint64_t> added(newer.size(), 0);
  for (size_t i = 0; i < newer.size(); i++) {
    added[i] = newer[i] - (i < older.size() ? std::min(older[i], newer[i]) : 0);
  }
  return added;
}

}  // namespace

std::optional<double> Log2HistogramQuantile(const std::vector<uint64_t>& older,
                                            const std::vector<uint64_t>& newer, double q) {
  const std::vector<uint64_t> added = Added(older, newer);
  const uint64_t total = std::accumulate(added.begin(), added.end(), uint64_t{0});
  if (total == 0) return std::nullopt;
  const double rank = q * total;
  uint64_t seen = 0;
  for (size_t i = 0; i < added.size(); i++) {
    seen += added[i];
    if (seen >= rank) return std::ldexp((1 << HIST_UNIT_SHIFT) * 1e-9, static_cast<int>(i));
  }
  return std::ldexp((1 << HIST_UNIT_SHIFT) * 1e-9, static_cast<int>(added.size()));
}

std::string FirstWaitsNote(const RunqWaits& older, const RunqWaits& newer) {
  const std::vector<uint64_t> added = Added(older.slots, newer.slots);
  const uint64_t waits = std::accumulate(added.begin(), added.end(), uint64_t{0});
  auto grown = [](uint64_t a, uint64_t b) { return b > a ? b - a : 0; };
  const uint64_t first = std::min(grown(older.first_waits, newer.first_waits), waits);
  if (first == 0) {
    return absl::StrFormat("; none of the window's %d waits a new task's first", waits);
  }
  const double first_s = grown(older.first_wait_ns, newer.first_wait_ns) * 1e-9;
  const double all_s = std::max(grown(older.sum_ns, newer.sum_ns) * 1e-9, first_s);
  return absl::StrFormat("; of the window's %d waits, %d new tasks' first (%.2f s of %.2f s)",
                         waits, first, first_s, all_s);
}

AnomalyEngine::AnomalyEngine(AnomalyConfig config,
                             std::function<void(const AnomalyChange&)> on_change)
    : config_(std::move(config)), on_change_(std::move(on_change)) {}

AnomalyEngine::PerStage& AnomalyEngine::StageState(const Stage& stage) {
  auto it = stages_.find(stage.id);
  if (it == stages_.end()) {
    it = stages_.emplace(stage.id, PerStage{.stage = stage,
                                              .pressure = PressureSpikeDetector(config_.pressure_spike),
                                              .faults = RateBaselineDetector(config_.fault_storm),
                                              .starvation = RateBaselineDetector(config_.cpu_starvation)})
             .first;
  }
  return it->second;
}

void AnomalyEngine::Note(PerStage& s, AnomalyRule rule, bool enabled, const DetectorState& state,
                         absl::Time t, std::vector<AnomalyChange>* changes) {
  const size_t i = static_cast<size_t>(rule);
  const bool active = enabled && state.active;
  if (active == s.view.active[i]) return;
  s.view.active[i] = active;
  if (active) s.view.fired[i]++;
  changes->push_back({s.stage, rule, active, state.summary, t});
}

void AnomalyEngine::Report(const std::vector<AnomalyChange>& changes) {
  for (const AnomalyChange& c : changes) on_change_(c);
}

DetectorState AnomalyEngine::AnyDomain(const PerStage& s, AnomalyRule rule) {
  for (const auto& [id, d] : s.domains) {
    const DetectorState& state =
        rule == AnomalyRule::kMemoryClimb ? d.climb.state() : d.eta.state();
    if (!state.active) continue;
    // Which cgroup of the stage it is: a run's own beneath the stage, often.
    if (d.path.empty()) return state;
    return {true, absl::StrCat("cgroup ", d.path, ": ", state.summary)};
  }
  return {};
}

void AnomalyEngine::OnMemory(const Stage& stage, absl::Time t,
                             const std::vector<MemoryDomainSample>& domains,
                             std::optional<double> psi_full_seconds) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    PerStage& s = StageState(stage);
    // Most stages have a domain or two: those are looked for in the list, not in a set made
    // for each stage each sample.
    constexpr size_t kListedInPlace = 8;
    absl::flat_hash_set<uint64_t> present;
    if (domains.size() > kListedInPlace) {
      for (const MemoryDomainSample& d : domains) present.insert(d.id);
    }
    auto gone = [&](const auto& e) {
      if (domains.size() > kListedInPlace) return !present.contains(e.first);
      return std::none_of(domains.begin(), domains.end(),
                          [&e](const MemoryDomainSample& d) { return d.id == e.first; });
    };
    std::erase_if(s.domains, gone);
    for (const MemoryDomainSample& d : domains) {
      if (!d.fresh) continue;
      auto it = s.domains.find(d.id);
      if (it == s.domains.end()) {
        it = s.domains
                 .emplace(d.id, DomainDetectors{.path = d.path,
                                                .climb = MemoryClimbDetector(config_.memory_climb),
                                                .eta = LimitEtaDetector(config_.limit_eta)})
                 .first;
        if (auto e = expected_.find(d.id); e != expected_.end()) it->second.eta.Expect(e->second);
      }
      it->second.climb.Update({t, d.working_set});
      it->second.eta.Update({t, d.working_set}, d.limit);
    }
    Note(s, AnomalyRule::kMemoryClimb, config_.memory_climb.enabled,
         AnyDomain(s, AnomalyRule::kMemoryClimb), t, &changes);
    Note(s, AnomalyRule::kLimitEta, config_.limit_eta.enabled, AnyDomain(s, AnomalyRule::kLimitEta),
         t, &changes);
    s.view.limit_eta_seconds.reset();
    for (const auto& [id, d] : s.domains) {
      if (std::optional<double> eta = d.eta.EtaSeconds()) {
        s.view.limit_eta_seconds = std::min(*eta, s.view.limit_eta_seconds.value_or(*eta));
      }
    }
    if (psi_full_seconds) {
      Note(s, AnomalyRule::kPressureSpike, config_.pressure_spike.enabled,
           s.pressure.Update({t, *psi_full_seconds}), t, &changes);
    }
  }
  Report(changes);
}

void AnomalyEngine::OnMajorFaults(const Stage& stage, absl::Time t, uint64_t total) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    PerStage& s = StageState(stage);
    Note(s, AnomalyRule::kFaultStorm, config_.fault_storm.enabled,
         s.faults.Update({t, static_cast<double>(total)}), t, &changes);
  }
  Report(changes);
}

void AnomalyEngine::OnRunqLatency(const Stage& stage, absl::Time t, RunqWaits waits) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    PerStage& s = StageState(stage);
    s.runq.emplace_back(t, std::move(waits));
    while (s.runq.size() > 2 && s.runq[1].first <= t - config_.runq_window) s.runq.pop_front();
    const RunqWaits& older = s.runq.front().second;
    const RunqWaits& newer = s.runq.back().second;
    std::optional<double> p99 = Log2HistogramQuantile(older.slots, newer.slots, 0.99);
    // No scheduling at all in the window: nothing waited, so no latency to judge.
    DetectorState state = s.starvation.Update({t, p99.value_or(0)});
    if (state.active) state.summary += FirstWaitsNote(older, newer);
    Note(s, AnomalyRule::kCpuStarvation, config_.cpu_starvation.enabled, state, t, &changes);
  }
  Report(changes);
}

void AnomalyEngine::OnOomKill(const Stage& stage, absl::Time t, const std::string& summary) {
  if (!config_.oom_kill) return;
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    PerStage& s = StageState(stage);
    s.oom_until = t + config_.oom_kill_hold;
    const size_t i = static_cast<size_t>(AnomalyRule::kOomKill);
    s.view.fired[i]++;  // every kill counts and pages, even while already active
    s.view.active[i] = true;
    changes.push_back({s.stage, AnomalyRule::kOomKill, true, summary, t});
  }
  Report(changes);
}

void AnomalyEngine::ExpectRun(uint64_t cgroup_id, const RunExpectation& expected) {
  absl::MutexLock lock(&mu_);
  expected_[cgroup_id] = expected;
  for (auto& [id, s] : stages_) {
    if (auto d = s.domains.find(cgroup_id); d != s.domains.end()) d->second.eta.Expect(expected);
  }
}

void AnomalyEngine::ForgetRun(uint64_t cgroup_id) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    expected_.erase(cgroup_id);
    for (auto& [id, s] : stages_) {
      if (s.slow_runs.erase(cgroup_id) == 0) continue;
      Note(s, AnomalyRule::kSlowRun, config_.slow_run.enabled, AnySlowRun(s), absl::Now(),
           &changes);
    }
  }
  Report(changes);
}

DetectorState AnomalyEngine::AnySlowRun(const PerStage& s) {
  if (s.slow_runs.empty()) return {};
  return {true, s.slow_runs.begin()->second};
}

void AnomalyEngine::OnRunPace(const Stage& stage, absl::Time t, uint64_t cgroup_id,
                              const DetectorState& state) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    PerStage& s = StageState(stage);
    if (state.active) {
      s.slow_runs[cgroup_id] = state.summary;
    } else {
      s.slow_runs.erase(cgroup_id);
    }
    Note(s, AnomalyRule::kSlowRun, config_.slow_run.enabled, AnySlowRun(s), t, &changes);
  }
  Report(changes);
}

void AnomalyEngine::Tick(absl::Time t) {
  std::vector<AnomalyChange> changes;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, s] : stages_) {
      const size_t i = static_cast<size_t>(AnomalyRule::kOomKill);
      if (s.view.active[i] && s.oom_until && t >= *s.oom_until) {
        s.view.active[i] = false;
        changes.push_back({s.stage, AnomalyRule::kOomKill, false, "", t});
      }
    }
  }
  Report(changes);
}

void AnomalyEngine::KeepStages(const absl::flat_hash_set<StageId>& known) {
  absl::MutexLock lock(&mu_);
  std::erase_if(stages_, [&known](const auto& entry) { return !known.contains(entry.first); });
}

std::map<StageId, StageAnomalies> AnomalyEngine::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::map<StageId, StageAnomalies> out;
  for (const auto& [id, s] : stages_) out[id] = s.view;
  return out;
}

}  // namespace stagewatch
