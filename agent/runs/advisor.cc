#include "runs/advisor.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "runs/verdict.h"
#include "units.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr double kCoreStep = 0.05;  // CPU recommendations are multiples of 1/20 of a CPU

uint64_t RoundUpToMiB(double bytes) {
  return static_cast<uint64_t>(std::ceil(bytes / kMiB)) * kMiB;
}

double RoundUpCores(double cores) {
  return std::max(kCoreStep, std::ceil(cores / kCoreStep - 1e-9) * kCoreStep);
}

bool OomKilled(const RunRecord& r) {
  return r.end->facts.oom_kills_kernel.value_or(0) > 0 ||
         r.agent.oom_kills_userspace.value_or(0) > 0;
}

// The limits a run ran under: a launcher run's as asked for, a discovered run's as its cgroup
// files held them at its end. A run without a memory-max (a discovered run recorded by an
// agent that stored no limits of its own) takes the limit the kernel held at its end.
RunLimits EffectiveLimits(const RunRecord& r) {
  RunLimits limits = r.start.limits;
  if (!limits.memory_max_bytes && r.end) limits.memory_max_bytes = r.end->facts.memory_limit_bytes;
  return limits;
}

std::vector<LimitPeriod> Periods(const std::vector<RunRecord>& oldest_first,
                                 const RunsConfig& config) {
  std::vector<LimitPeriod> periods;
  for (const RunRecord& r : oldest_first) {
    const RunLimits limits = EffectiveLimits(r);
    if (periods.empty() || !(periods.back().limits == limits)) {
      periods.push_back({limits, 0, r.start.start, r.start.start, 0, {}, {}});
    }
    LimitPeriod& p = periods.back();
    ++p.runs;
    p.last_start = r.start.start;
    ++p.verdicts[std::string(VerdictName(JudgeRun(r, config).kind))];
    p.samples.Add(r);
  }
  for (LimitPeriod& p : periods) p.median_wall_seconds = Median(p.samples.wall_seconds);
  return periods;
}

void AdviseCpu(const std::vector<RunRecord>& runs, const RunsConfig& config, Advice& a) {
  std::vector<double> cores;
  for (const RunRecord& r : runs) {
    if (r.end->facts.cpu_p95_cores) cores.push_back(*r.end->facts.cpu_p95_cores);
    const double wall = absl::ToDoubleSeconds(*r.Wall());
    const auto throttled = r.end->facts.cpu_throttled_seconds;
    const std::optional<double> cpu_max = EffectiveLimits(r).cpu_max_cores;
    if (cpu_max && throttled && wall > 0 && *throttled / wall >= config.degraded_fraction) {
      a.throttled_at_cores = std::max(a.throttled_at_cores.value_or(0), *cpu_max);
    }
  }
  if (static_cast<int>(cores.size()) < config.advise.min_runs) {
    a.why.push_back(absl::StrFormat("cpu_max_cores: no recommendation, %d runs have CPU samples "
                                    "(need %d)", cores.size(), config.advise.min_runs));
    return;
  }
  a.cpu_percentile_cores = Percentile(cores, config.advise.memory_percentile);
  double cpu = *a.cpu_percentile_cores * (1 + config.advise.cpu_margin);
  std::string why = absl::StrFormat("cpu_max_cores: p%.0f of the runs' p95 CPU use %.2f × %.2f",
                                    config.advise.memory_percentile * 100,
                                    *a.cpu_percentile_cores, 1 + config.advise.cpu_margin);
  if (a.throttled_at_cores && config.advise.oom_bump * *a.throttled_at_cores > cpu) {
    cpu = config.advise.oom_bump * *a.throttled_at_cores;
    why = absl::StrFormat("cpu_max_cores: a run lost %.0f%%+ of its wall time to throttling at "
                          "%.2f CPUs, so %.2f × that", config.degraded_fraction * 100,
                          *a.throttled_at_cores, config.advise.oom_bump);
  }
  a.cpu_max_cores = RoundUpCores(cpu);
  a.why.push_back(why + absl::StrFormat(", rounded up to %.2f", *a.cpu_max_cores));
}

}  // namespace

Advice AdviseLimits(const std::string& stage, std::vector<RunRecord> runs,
                    const RunsConfig& config) {
  const AdvisorConfig& ac = config.advise;
  Advice a;
  a.stage = stage;
  a.percentile = ac.memory_percentile;
  std::erase_if(runs, [](const RunRecord& r) { return !r.end; });
  std::sort(runs.begin(), runs.end(), [](const RunRecord& x, const RunRecord& y) {
    return x.start.start > y.start.start;
  });
  if (static_cast<int>(runs.size()) > ac.max_runs) runs.resize(ac.max_runs);
  std::reverse(runs.begin(), runs.end());  // oldest first from here on
  a.runs_counted = static_cast<int>(runs.size());
  a.periods = Periods(runs, config);
  a.limit_changes = CompareLimitChanges(a.periods);

  std::vector<double> peaks;
  for (const RunRecord& r : runs) {
    ++a.verdicts[std::string(VerdictName(JudgeRun(r, config).kind))];
    if (r.end->facts.memory_peak_bytes) peaks.push_back(double(*r.end->facts.memory_peak_bytes));
    if (OomKilled(r)) {
      const auto limit = r.end->facts.memory_limit_bytes ? r.end->facts.memory_limit_bytes
                                                          : r.start.limits.memory_max_bytes;
      if (limit) a.oom_limit_bytes = std::max(a.oom_limit_bytes.value_or(0), *limit);
    }
  }
  a.runs_with_peak = static_cast<int>(peaks.size());
  if (a.runs_with_peak < ac.min_runs) {
    a.not_enough = absl::StrFormat(
        "not enough runs: %d finished run%s of stage \"%s\" %s a memory peak, and the advisor "
        "needs %d (runs.advise.min_runs); run the stage with `stagewatch run` a few more times",
        a.runs_with_peak, a.runs_with_peak == 1 ? "" : "s", stage,
        a.runs_with_peak == 1 ? "has" : "have", ac.min_runs);
    return a;
  }
  a.enough_runs = true;
  a.largest_peak_bytes = static_cast<uint64_t>(*std::max_element(peaks.begin(), peaks.end()));
  a.percentile_peak_bytes = static_cast<uint64_t>(Percentile(peaks, ac.memory_percentile));

  const double margin = ac.memory_margin * double(a.percentile_peak_bytes);
  double memory_max = double(a.largest_peak_bytes) + margin;
  std::string why = absl::StrFormat(
      "memory_max_bytes: largest peak %s + %.0f%% of the p%.0f peak %s", FormatBytes(a.largest_peak_bytes),
      ac.memory_margin * 100, ac.memory_percentile * 100, FormatBytes(a.percentile_peak_bytes));
  if (a.oom_limit_bytes && ac.oom_bump * double(*a.oom_limit_bytes) > memory_max) {
    memory_max = ac.oom_bump * double(*a.oom_limit_bytes);
    why = absl::StrFormat("memory_max_bytes: a run was OOM-killed at a %s limit, so %.2f × that",
                          FormatBytes(*a.oom_limit_bytes), ac.oom_bump);
  }
  a.memory_max_bytes = RoundUpToMiB(memory_max);
  a.why.push_back(why + absl::StrFormat(", rounded up to a MiB: %s", FormatBytes(a.memory_max_bytes)));

  const double high = std::max(double(a.percentile_peak_bytes),
                               ac.memory_high_fraction * double(a.memory_max_bytes));
  a.memory_high_bytes = std::min(a.memory_max_bytes, RoundUpToMiB(high));
  a.why.push_back(absl::StrFormat(
      "memory_high_bytes: the larger of the p%.0f peak and %.0f%% of memory_max: %s",
      ac.memory_percentile * 100, ac.memory_high_fraction * 100, FormatBytes(a.memory_high_bytes)));

  AdviseCpu(runs, config, a);
  return a;
}

}  // namespace stagewatch
