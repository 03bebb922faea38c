#include "runs/discovered_sampler.h"

#include <sys/resource.h>

#include <algorithm>

namespace stagewatch {
namespace {

// Descriptors the run files may keep open: a quarter of the soft RLIMIT_NOFILE (256 under
// systemd's default 1024), beside the task-state reader's half. The limit is not raised: the
// HTTP server's select() cannot take descriptors from 1024 on.
size_t OpenFileAllowance() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur == RLIM_INFINITY) return 4096;
  return size_t(std::min<rlim_t>(limit.rlim_cur / 4, 4096));
}

}  // namespace

DiscoveredSampler::DiscoveredSampler(DiscoveredSamplerOptions options)
    : options_(std::move(options)), open_files_(OpenFileAllowance()) {}

void DiscoveredSampler::Add(const std::string& run_id, const std::string& cgroup_path,
                            uint64_t cgroup_id, absl::Time now) {
  auto [added, fresh] = runs_.emplace(
      run_id, Sampled{.cgroup_id = cgroup_id,
                      .usage = RunUsage(options_.near_limit_fraction), .next = now});
  if (!fresh) return;
  Sampled& s = added->second;
  s.files = std::make_unique<RunCgroupFiles>(options_.layout, cgroup_path, &open_files_);
  s.turn = turn_.insert(turn_.end(), added);
}

void DiscoveredSampler::RefreshSnapshot() {
  std::shared_ptr<const Snapshot> latest =
      options_.latest_snapshot ? options_.latest_snapshot() : nullptr;
  if (!latest) {
    snapshot_taken_.reset();
    domains_.clear();
    return;
  }
  if (latest->taken == snapshot_taken_) return;  // a kill's snapshot has the sample's memory
  snapshot_taken_ = latest->taken;
  domains_.clear();  // its room stays for the next
  for (const auto& [stage, memory] : latest->memory) {
    for (const DomainMemory& d : memory.domains) {
      if (!d.sampled) continue;
      domains_.emplace_back(d.id, SampledMemory{.usage_bytes = d.usage_bytes,
                                                .peak_bytes = d.peak_bytes,
                                                .failcnt = d.failcnt});
    }
  }
  std::sort(domains_.begin(), domains_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::optional<SampledMemory> DiscoveredSampler::FromSnapshot(const Sampled& run) const {
  // A snapshot taken before the run's previous sample would give that sample's memory again.
  const absl::Time previous = run.last ? run.last->usage.at : absl::InfinitePast();
  if (!snapshot_taken_ || *snapshot_taken_ <= previous || run.cgroup_id == 0) {
    return std::nullopt;
  }
  auto found = std::lower_bound(domains_.begin(), domains_.end(), run.cgroup_id,
                                [](const auto& d, uint64_t id) { return d.first < id; });
  if (found == domains_.end() || found->first != run.cgroup_id) return std::nullopt;
  return found->second;
}

size_t DiscoveredSampler::series_samples() const {
  return std::clamp(options_.series_samples / std::max<size_t>(runs_.size(), 1),
                    kMinSeriesSamples, UsageSeries::kMaxSamples);
}

size_t DiscoveredSampler::kept_samples() const {
  size_t kept = 0;
  for (const auto& [id, run] : runs_) kept += run.usage.kept();
  return kept;
}

void DiscoveredSampler::Sample(absl::Time now) {
  RefreshSnapshot();
  const double elapsed = last_sample_ ? absl::ToDoubleSeconds(now - *last_sample_) : 1;
  last_sample_ = now;
  const double per_second = options_.reads_per_second;
  credit_ = std::min(per_second, credit_ + per_second * std::max(0.0, elapsed));
  const size_t per_run = series_samples();
  // One pass at most: a run sampled now goes to the back of the turn.
  for (size_t n = turn_.size(); n > 0 && credit_ >= 1; --n) {
    const Runs::iterator run = turn_.front();
    turn_.splice(turn_.end(), turn_, turn_.begin());
    Sampled& s = run->second;
    if (s.next > now) continue;
    s.next = now + options_.interval;
    const std::optional<SampledMemory> sampled = FromSnapshot(s);
    std::optional<RunCgroupReading> r = s.files->Read(now, sampled ? &*sampled : nullptr);
    from_snapshot_ += sampled && r;
    const int reads = r ? r->reads : 1;
    credit_ -= reads + (r ? kPointCost : 0);
    reads_ += reads;
    if (!r) continue;  // the cgroup is going
    if (!s.last) {
      // The first reading is the baseline of the rates; its memory still counts.
      s.usage.SetBaseline(now - options_.interval, std::nullopt);
    }
    if (s.points.empty()) with_points_.insert(run->first);
    s.usage.set_max_samples(per_run);
    s.points.push_back(s.usage.Add(r->usage));
    if (NumaMemoryBytes(r->memory_by_node) >= NumaMemoryBytes(s.memory_by_node_peak)) {
      s.memory_by_node_peak = r->memory_by_node;
    }
    s.last = std::move(r);
  }
}

std::map<std::string, std::vector<RunSample>> DiscoveredSampler::TakePoints() {
  std::map<std::string, std::vector<RunSample>> out;
  for (const std::string& id : with_points_) {
    auto found = runs_.find(id);
    if (found != runs_.end()) out[id] = std::exchange(found->second.points, {});
  }
  with_points_.clear();
  return out;
}

std::optional<CgroupFacts> DiscoveredSampler::Remove(const std::string& run_id,
                                                     std::vector<RunSample>& points) {
  auto found = runs_.find(run_id);
  if (found == runs_.end()) return std::nullopt;
  turn_.erase(found->second.turn);
  with_points_.erase(run_id);
  Sampled s = std::move(found->second);
  runs_.erase(found);
  points = std::move(s.points);
  if (!s.last) return std::nullopt;
  CgroupFacts f;
  f.memory_limit_bytes = s.last->usage.memory_limit_bytes;
  f.memory_peak_bytes = s.last->memory_peak_bytes;
  f.memory_failcnt = s.last->memory_failcnt;
  f.limits = s.files->limits();
  SetCpuFacts(s.last->cpu, s.files->cfs_period_seconds(), f);
  const std::optional<uint64_t>* psi = s.last->usage.psi_some_us;
  if (psi[0]) f.memory_pressure_seconds = double(*psi[0]) / 1e6;
  if (psi[1]) f.cpu_pressure_seconds = double(*psi[1]) / 1e6;
  UsageSummary usage = s.usage.Summary();
  usage.memory_by_node = std::move(s.memory_by_node_peak);
  MergeUsage(usage, f);
  return f;
}

}  // namespace stagewatch
