#include "anomaly/anomaly_feeder.h"

#include "stages/stage_directory.h"

namespace stagewatch {

void AnomalyFeeder::Feed(absl::Time now, const Snapshot& sampled) {
  // The known stages are listed again, and the engine's forgotten ones dropped, only when they
  // changed: at 500 stages a listing each sample was a tenth of the feed.
  const uint64_t version = stages_->stages_version();  // before the listing: never newer
  if (!known_ || version != known_version_) {
    known_ = std::make_unique<const StageDirectory>(*stages_);
    known_version_ = version;
    engine_->KeepStages(known_->ids());
  }
  const StageDirectory& known = *known_;

  for (const auto& [id, m] : sampled.memory) {
    if (!known.Find(id)) continue;  // forgotten since the sample: its detectors are gone
    // Not sampled now: its tops could not be read, or it has no cgroup any more (no domains,
    // so the engine drops their detectors).
    const bool fresh = m.sampled_at == now;
    // Written over the last stage's, in place: no allocation a stage.
    std::vector<MemoryDomainSample>& domains = domains_;
    domains.resize(m.domains.size());
    for (size_t i = 0; i < m.domains.size(); i++) {
      const DomainMemory& d = m.domains[i];
      MemoryDomainSample& out = domains[i];
      out.id = d.id;
      out.path = d.path;
      out.fresh = fresh && d.sampled;
      out.working_set = static_cast<double>(d.working_set_bytes);
      out.limit = d.limit_bytes ? std::optional<double>(*d.limit_bytes) : std::nullopt;
    }
    engine_->OnMemory(m.stage, now, domains, fresh ? m.psi_full_seconds : std::nullopt);
  }
  // Totals of stages forgotten since `known` was listed are left out.
  for (const SampleHook& hook : hooks_) hook(now, known);
  engine_->Tick(now);
}

}  // namespace stagewatch
