#include "runs/baseline.h"

#include <functional>

#include "runs/percentile.h"
#include "runs/verdict.h"

namespace stagewatch {
namespace {

// The median of the figure over the runs that observed it; nullopt when none did.
std::optional<double> MedianOf(const std::vector<RunFigures>& figures,
                               const std::function<std::optional<double>(const RunFigures&)>& f) {
  std::vector<double> values;
  for (const RunFigures& r : figures) {
    if (std::optional<double> v = f(r)) values.push_back(*v);
  }
  if (values.empty()) return std::nullopt;
  return Percentile(values, 0.5);
}

}  // namespace

RunFigures FiguresOf(const RunRecord& run) {
  RunFigures out;
  if (!run.end) return out;
  const CgroupFacts& f = run.end->facts;
  out.wall_seconds = absl::ToDoubleSeconds(*run.Wall());
  out.cpu_seconds = f.cpu_seconds;
  out.queued_seconds = QueuedNotThrottledSeconds(run);
  out.throttled_wall_seconds = f.cpu_throttled_wall_seconds;
  out.reclaim_stall_seconds = run.agent.reclaim_stall_seconds;
  out.memory_pressure_seconds = f.memory_pressure_seconds;
  out.io_pressure_seconds = f.io_pressure_seconds;
  if (f.memory_peak_bytes) out.memory_peak_bytes = double(*f.memory_peak_bytes);
  return out;
}

std::optional<Baseline> BaselineOf(const std::vector<RunRecord>& runs) {
  Baseline b;
  std::vector<RunFigures> figures;
  for (const RunRecord& r : runs) {
    if (!r.end) continue;
    b.run_ids.push_back(r.start.id);
    figures.push_back(FiguresOf(r));
  }
  if (static_cast<int>(figures.size()) < kMinBaselineRuns) return std::nullopt;
  RunFigures& m = b.median;
  m.wall_seconds = *MedianOf(figures, [](const RunFigures& r) { return r.wall_seconds; });
  m.cpu_seconds = MedianOf(figures, [](const RunFigures& r) { return r.cpu_seconds; });
  m.queued_seconds = MedianOf(figures, [](const RunFigures& r) { return r.queued_seconds; });
  m.throttled_wall_seconds =
      MedianOf(figures, [](const RunFigures& r) { return r.throttled_wall_seconds; });
  m.reclaim_stall_seconds =
      MedianOf(figures, [](const RunFigures& r) { return r.reclaim_stall_seconds; });
  m.memory_pressure_seconds =
      MedianOf(figures, [](const RunFigures& r) { return r.memory_pressure_seconds; });
  m.io_pressure_seconds =
      MedianOf(figures, [](const RunFigures& r) { return r.io_pressure_seconds; });
  m.memory_peak_bytes = MedianOf(figures, [](const RunFigures& r) { return r.memory_peak_bytes; });
  std::vector<double> walls;
  for (const RunFigures& r : figures) walls.push_back(r.wall_seconds);
  b.p90_wall_seconds = Percentile(walls, 0.9);
  return b;
}

}  // namespace stagewatch
