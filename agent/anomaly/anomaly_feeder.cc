#include "anomaly/anomaly_feeder.h"

namespace stagewatch {

void AnomalyFeeder::Feed(absl::Time now, const std::map<std::string, StageMemory>& sampled) {
  std::map<std::string, Stage> by_name;
  for (Stage& s : stages_->KnownStages()) by_name[s.name] = s;
  auto named = [&](const std::string& name) {
    auto it = by_name.find(name);
    return it == by_name.end() ? Stage{name, ""} : it->second;
  };

  for (const auto& [name, m] : sampled) {
    // Not sampled now: its tops could not be read, or it has no cgroup any more (no domains,
    // so the engine drops their detectors).
    const bool fresh = m.sampled_at == now;
    std::vector<MemoryDomainSample> domains;
    for (const DomainMemory& d : m.domains) {
      domains.push_back({.id = d.id,
                         .path = d.path,
                         .fresh = fresh && d.sampled,
                         .working_set = static_cast<double>(d.working_set_bytes),
                         .limit = d.limit_bytes ? std::optional<double>(*d.limit_bytes)
                                                : std::nullopt});
    }
    engine_->OnMemory(named(name), now, domains, fresh ? m.psi_full_seconds : std::nullopt);
  }
  if (memory_) {
    memory_->Collect();
    for (const auto& [name, t] : memory_->Totals()) {
      if (name != kUnattributedStage) engine_->OnMajorFaults(named(name), now, t.major_faults);
    }
  }
  if (sched_) {
    sched_->Collect();
    for (const auto& [name, t] : sched_->Totals()) {
      if (name != kUnattributedStage) {
        engine_->OnRunqLatency(named(name), now, t.runq_slots, t.runq_above);
      }
    }
  }
  engine_->Tick(now);
}

}  // namespace stagewatch
