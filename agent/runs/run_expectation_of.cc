#include "runs/run_expectation_of.h"

#include <algorithm>

#include "runs/percentile.h"

namespace stagewatch {
namespace {

// The run's memory by age, from its points that have one.
std::vector<AgePoint> MemoryByAge(const RunMemorySeries& run) {
  std::vector<AgePoint> curve;
  for (const RunSample& s : run.samples) {
    if (!s.memory_bytes) continue;
    const double at = absl::ToDoubleSeconds(s.at - run.start);
    if (!curve.empty() && at <= curve.back().age_seconds) continue;
    curve.push_back({at, static_cast<double>(*s.memory_bytes)});
  }
  return curve;
}

}  // namespace

std::vector<AgePoint> UsualMemoryByAge(const std::vector<RunMemorySeries>& runs,
                                       size_t max_points) {
  double oldest = 0;
  std::vector<std::vector<AgePoint>> each;
  for (const RunMemorySeries& run : runs) {
    each.push_back(MemoryByAge(run));
    if (!each.back().empty()) oldest = std::max(oldest, each.back().back().age_seconds);
  }
  std::vector<AgePoint> curve;
  if (oldest <= 0 || max_points < 2) return curve;
  const double step = oldest / static_cast<double>(max_points - 1);
  for (size_t i = 0; i < max_points; ++i) {
    const double age = step * static_cast<double>(i);
    std::vector<double> at;
    for (const std::vector<AgePoint>& run : each) {
      if (std::optional<double> m = UsualMemoryAt(run, age)) at.push_back(*m);
    }
    if (!at.empty()) curve.push_back({age, Median(at)});
  }
  return curve;
}

absl::StatusOr<RunExpectation> ExpectationOf(Ledger& ledger, const RunStart& run,
                                             const std::vector<RunRecord>& candidates,
                                             const Baseline& baseline) {
  std::vector<RunMemorySeries> series;
  for (const RunRecord& r : candidates) {
    absl::StatusOr<std::vector<RunSample>> samples = ledger.Samples(r.start.id);
    if (!samples.ok()) return samples.status();
    series.push_back({r.start.start, *std::move(samples)});
  }
  return RunExpectation{.run_id = run.id,
                        .stage = run.stage,
                        .start = run.start,
                        .baseline_runs = static_cast<int>(baseline.run_ids.size()),
                        .usual_memory = UsualMemoryByAge(series),
                        .median_wall_seconds = baseline.median.wall_seconds,
                        .p90_wall_seconds = baseline.p90_wall_seconds,
                        .median_cpu_seconds = baseline.median.cpu_seconds};
}

}  // namespace stagewatch
