#include "runs/run_facts.h"

#include <algorithm>

#include "cgroup/cpu_limits.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "cgroup/memory_stats.h"
#include "cgroup/numa_stat.h"
#include "cgroup/psi.h"

namespace stagewatch {

void SetCpuFacts(const CpuCgroupStats& c, std::optional<double> period, CgroupFacts& f) {
  if (c.usage_ns) f.cpu_seconds = double(*c.usage_ns) / 1e9;
  if (c.throttled_ns) f.cpu_throttled_seconds = double(*c.throttled_ns) / 1e9;
  if (f.cpu_throttled_seconds && c.nr_throttled && period) {
    f.cpu_throttled_wall_seconds =
        std::min(*f.cpu_throttled_seconds, double(*c.nr_throttled) * *period);
  }
}

CgroupFacts ReadCgroupFacts(const CgroupLayout& layout, std::vector<std::string>& problems) {
  CgroupFacts f;
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  if (absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(layout, "/"); m.ok()) {
    f.memory_limit_bytes = m->limit_bytes;
    f.memory_peak_bytes = m->peak_bytes;
    auto event = [&](const char* name) -> std::optional<uint64_t> {
      auto it = m->events.find(name);
      return it == m->events.end() ? std::nullopt : std::optional<uint64_t>(it->second);
    };
    f.memory_failcnt = event(v2 ? "max" : "failcnt");
    f.oom_kills_kernel = event("oom_kill");
  } else {
    problems.push_back(std::string(m.status().message()));
  }
  if (absl::StatusOr<CpuCgroupStats> c = ReadCpuStats(layout, "/"); c.ok()) {
    absl::StatusOr<double> period = ReadCfsPeriodSeconds(layout, "/");
    SetCpuFacts(*c, period.ok() ? std::optional(*period) : std::nullopt, f);
  } else {
    problems.push_back(std::string(c.status().message()));
  }
  // Not every kernel has it (CONFIG_NUMA): its absence is no problem of the run's.
  if (absl::StatusOr<NumaMemory> numa = ReadNumaStat(layout, "/"); numa.ok()) {
    f.memory_by_node = *std::move(numa);
  }
  for (auto [resource, out] : {std::pair{"memory", &f.memory_pressure_seconds},
                               std::pair{"cpu", &f.cpu_pressure_seconds},
                               std::pair{"io", &f.io_pressure_seconds}}) {
    if (absl::StatusOr<PsiTotals> p = ReadPsi(layout, "/", resource); p.ok()) {
      *out = double(p->some_us) / 1e6;
    } else {
      problems.push_back(std::string(p.status().message()));
    }
  }
  return f;
}

void RunUsage::SetBaseline(absl::Time at, std::optional<uint64_t> cpu_ns) {
  series_.SetBaseline(at, cpu_ns);
  last_ = CgroupReading{.at = at, .cpu_ns = cpu_ns};
}

RunSample RunUsage::Add(const CgroupReading& r) {
  series_.Add(r.at, r.memory_bytes.value_or(0), r.memory_limit_bytes, r.cpu_ns);
  RunSample p{r.at, r.memory_bytes, r.memory_limit_bytes, {}, {}, {}};
  const double elapsed_ns = last_ ? absl::ToDoubleNanoseconds(r.at - last_->at) : 0;
  auto rate = [&](std::optional<uint64_t> now_v, std::optional<uint64_t> before, double unit) {
    if (!now_v || !before || elapsed_ns <= 0 || *now_v < *before) return std::optional<double>();
    return std::optional<double>(double(*now_v - *before) * unit / elapsed_ns);
  };
  if (last_) {
    p.cpu_cores = rate(r.cpu_ns, last_->cpu_ns, 1);
    p.memory_pressure = rate(r.psi_some_us[0], last_->psi_some_us[0], 1000);
    p.cpu_pressure = rate(r.psi_some_us[1], last_->psi_some_us[1], 1000);
  }
  last_ = r;
  return p;
}

RunSampler::RunSampler(CgroupLayout reader_layout, absl::Duration interval,
                       double near_limit_fraction, SampleWriter write)
    : layout_(std::move(reader_layout)),
      interval_(interval),
      usage_(near_limit_fraction),
      write_(std::move(write)) {
  thread_ = std::thread([this] { Loop(); });
}

RunSampler::~RunSampler() { Stop(); }

void RunSampler::SampleOnce() {
  absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(layout_, "/");
  if (!m.ok()) return;  // the run's cgroup is going away
  absl::StatusOr<CpuCgroupStats> c = ReadCpuStats(layout_, "/");
  CgroupReading r{.at = absl::Now(), .memory_bytes = m->usage_bytes,
                  .memory_limit_bytes = m->limit_bytes,
                  .cpu_ns = c.ok() ? c->usage_ns : std::nullopt};
  if (write_) {
    int i = 0;
    for (const char* resource : {"memory", "cpu"}) {
      absl::StatusOr<PsiTotals> psi = ReadPsi(layout_, "/", resource);
      r.psi_some_us[i++] = psi.ok() ? std::optional(psi->some_us) : std::nullopt;
    }
  }
  if (absl::StatusOr<NumaMemory> numa = ReadNumaStat(layout_, "/");
      numa.ok() && NumaMemoryBytes(*numa) >= NumaMemoryBytes(memory_by_node_peak_)) {
    memory_by_node_peak_ = *std::move(numa);
  }
  const RunSample p = usage_.Add(r);
  if (!write_) return;
  pending_.push_back(p);
  if (pending_.size() >= kBatch) {
    write_(pending_);
    pending_.clear();
  }
}

void RunSampler::Loop() {
  std::unique_lock lock(mu_);
  const auto period = absl::ToChronoNanoseconds(interval_);
  absl::StatusOr<CpuCgroupStats> start = ReadCpuStats(layout_, "/");
  usage_.SetBaseline(absl::Now(), start.ok() ? start->usage_ns : std::nullopt);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) SampleOnce();
}

UsageSummary RunSampler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (write_ && !pending_.empty()) write_(pending_);
  pending_.clear();
  UsageSummary summary = usage_.Summary();
  summary.memory_by_node = memory_by_node_peak_;
  return summary;
}

void MergeUsage(const UsageSummary& usage, CgroupFacts& facts) {
  facts.memory_mean_bytes = usage.memory_mean_bytes;
  facts.memory_p95_bytes = usage.memory_p95_bytes;
  facts.near_limit_seconds = usage.near_limit_seconds;
  facts.cpu_p95_cores = usage.cpu_p95_cores;
  // The peak of the samples and the end's reading (a run shorter than an interval has none).
  if (NumaMemoryBytes(usage.memory_by_node) > NumaMemoryBytes(facts.memory_by_node)) {
    facts.memory_by_node = usage.memory_by_node;
  }
}

}  // namespace stagewatch
