#include "runs/run_facts.h"

#include "cgroup/cpu_stats.h"
#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"

namespace stagewatch {

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
    if (c->usage_ns) f.cpu_seconds = double(*c->usage_ns) / 1e9;
    if (c->throttled_ns) f.cpu_throttled_seconds = double(*c->throttled_ns) / 1e9;
  } else {
    problems.push_back(std::string(c.status().message()));
  }
  for (auto [resource, out] : {std::pair{"memory", &f.memory_pressure_seconds},
                               std::pair{"cpu", &f.cpu_pressure_seconds}}) {
    if (absl::StatusOr<PsiTotals> p = ReadPsi(layout, "/", resource); p.ok()) {
      *out = double(p->some_us) / 1e6;
    } else {
      problems.push_back(std::string(p.status().message()));
    }
  }
  return f;
}

RunSampler::RunSampler(CgroupLayout reader_layout, absl::Duration interval,
                       double near_limit_fraction)
    : layout_(std::move(reader_layout)), interval_(interval), series_(near_limit_fraction) {
  thread_ = std::thread([this] { Loop(); });
}

RunSampler::~RunSampler() { Stop(); }

void RunSampler::SampleOnce() {
  absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(layout_, "/");
  if (!m.ok()) return;  // the run's cgroup is going away
  absl::StatusOr<CpuCgroupStats> c = ReadCpuStats(layout_, "/");
  series_.Add(absl::Now(), m->usage_bytes, m->limit_bytes,
              c.ok() ? c->usage_ns : std::nullopt);
}

void RunSampler::Loop() {
  std::unique_lock lock(mu_);
  const auto period = absl::ToChronoNanoseconds(interval_);
  absl::StatusOr<CpuCgroupStats> start = ReadCpuStats(layout_, "/");
  series_.SetBaseline(absl::Now(), start.ok() ? start->usage_ns : std::nullopt);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) SampleOnce();
}

UsageSummary RunSampler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return series_.Summary();
}

void MergeUsage(const UsageSummary& usage, CgroupFacts& facts) {
  facts.memory_mean_bytes = usage.memory_mean_bytes;
  facts.memory_p95_bytes = usage.memory_p95_bytes;
  facts.near_limit_seconds = usage.near_limit_seconds;
  facts.cpu_p95_cores = usage.cpu_p95_cores;
}

}  // namespace stagewatch
