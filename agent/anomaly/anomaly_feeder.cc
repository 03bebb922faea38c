#include "anomaly/anomaly_feeder.h"

#include "stages/stage_directory.h"

namespace stagewatch {

void AnomalyFeeder::Feed(absl::Time now, const Snapshot& sampled) {
  const StageDirectory known(*stages_);
  engine_->KeepStages(known.ids());

  for (const auto& [id, m] : sampled.memory) {
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
    engine_->OnMemory(m.stage, now, domains, fresh ? m.psi_full_seconds : std::nullopt);
  }
  // Totals of stages forgotten since `known` was listed are left out.
  for (const SampleHook& hook : hooks_) hook(now, known);
  engine_->Tick(now);
}

}  // namespace stagewatch
