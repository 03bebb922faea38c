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
    if (m.sampled_at != now) continue;  // the stage has no cgroup any more
    // The ETA follows the cgroup closest to its limit, wherever in the stage it is.
    engine_->OnMemory(named(name), now, m.working_set_bytes,
                      m.limit_working_set_bytes.value_or(m.working_set_bytes),
                      m.limit_bytes ? std::optional<double>(*m.limit_bytes) : std::nullopt,
                      m.psi_full_seconds);
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
