#include "runs/run_facts.h"

#include <algorithm>
#include <fstream>

#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"

namespace stagewatch {
namespace {

// The CFS period of the run's cgroup: v1 cpu.cfs_period_us, v2 the second field of cpu.max.
std::optional<double> CfsPeriodSeconds(const CgroupLayout& layout) {
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  const std::string dir = ControllerDir(layout, "cpu", "/");
  if (dir.empty()) return std::nullopt;
  std::ifstream in(dir + (v2 ? "/cpu.max" : "/cpu.cfs_period_us"));
  std::string quota;
  uint64_t period_us = 0;
  if (v2 && !(in >> quota)) return std::nullopt;
  if (!(in >> period_us) || period_us == 0) return std::nullopt;
  return double(period_us) / 1e6;
}

}  // namespace

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
    const std::optional<double> period = CfsPeriodSeconds(layout);
    if (f.cpu_throttled_seconds && c->nr_throttled && period) {
      f.cpu_throttled_wall_seconds =
          std::min(*f.cpu_throttled_seconds, double(*c->nr_throttled) * *period);
    }
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
                       double near_limit_fraction, SampleWriter write)
    : layout_(std::move(reader_layout)),
      interval_(interval),
      series_(near_limit_fraction),
      write_(std::move(write)) {
  thread_ = std::thread([this] { Loop(); });
}

RunSampler::~RunSampler() { Stop(); }

void RunSampler::SampleOnce() {
  absl::StatusOr<MemoryCgroupStats> m = ReadMemoryStats(layout_, "/");
  if (!m.ok()) return;  // the run's cgroup is going away
  absl::StatusOr<CpuCgroupStats> c = ReadCpuStats(layout_, "/");
  const absl::Time now = absl::Now();
  const std::optional<uint64_t> cpu_ns = c.ok() ? c->usage_ns : std::nullopt;
  series_.Add(now, m->usage_bytes, m->limit_bytes, cpu_ns);
  if (!write_) return;
  RunSample p{now, m->usage_bytes, m->limit_bytes, {}, {}, {}};
  const double elapsed_ns = last_ ? absl::ToDoubleNanoseconds(now - last_->at) : 0;
  auto rate = [&](std::optional<uint64_t> now_v, std::optional<uint64_t> before, double unit) {
    if (!now_v || !before || elapsed_ns <= 0 || *now_v < *before) return std::optional<double>();
    return std::optional<double>(double(*now_v - *before) * unit / elapsed_ns);
  };
  p.cpu_cores = rate(cpu_ns, last_cpu_ns_, 1);
  std::optional<double>* pressure[2] = {&p.memory_pressure, &p.cpu_pressure};
  int i = 0;
  for (const char* resource : {"memory", "cpu"}) {
    absl::StatusOr<PsiTotals> psi = ReadPsi(layout_, "/", resource);
    const std::optional<uint64_t> total = psi.ok() ? std::optional(psi->some_us) : std::nullopt;
    *pressure[i] = rate(total, last_psi_us_[i], 1000);
    last_psi_us_[i++] = total;
  }
  last_cpu_ns_ = cpu_ns;
  last_ = p;
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
  series_.SetBaseline(absl::Now(), start.ok() ? start->usage_ns : std::nullopt);
  last_cpu_ns_ = start.ok() ? start->usage_ns : std::nullopt;
  last_ = RunSample{absl::Now()};
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
  return series_.Summary();
}

void MergeUsage(const UsageSummary& usage, CgroupFacts& facts) {
  facts.memory_mean_bytes = usage.memory_mean_bytes;
  facts.memory_p95_bytes = usage.memory_p95_bytes;
  facts.near_limit_seconds = usage.near_limit_seconds;
  facts.cpu_p95_cores = usage.cpu_p95_cores;
}

}  // namespace stagewatch
