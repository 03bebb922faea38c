#include "runs/slowdown.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/verdict.h"

namespace stagewatch {
namespace {

struct CauseNames {
  std::string_view name;
  std::string_view text;
};
constexpr CauseNames kCauseNames[kSlowdownCauses] = {
    {"cpu_wait", "waiting for CPU"},
    {"cpu_throttling", "throttled by its CPU limit"},
    {"memory_reclaim", "memory reclaim"},
    {"memory_pressure", "memory pressure"},
    {"io_pressure", "I/O pressure"},
    {"cpu_work", "more CPU work"},
    {"unexplained", "unexplained"},
};

// The figure's growth over the baseline's, or nullopt (named in `unobserved`) when either side
// did not observe it. A figure that shrank grew by 0: an improvement explains no excess.
std::optional<double> Growth(std::optional<double> run, std::optional<double> baseline,
                             SlowdownCause cause, std::vector<std::string>& unobserved) {
  if (!run || !baseline) {
    unobserved.emplace_back(SlowdownCauseName(cause));
    return std::nullopt;
  }
  return std::max(0.0, *run - *baseline);
}

// "12,400"
std::string Thousands(uint64_t n) {
  std::string digits = absl::StrCat(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

// Seconds as a reader wants them in a sentence: "37 s", "1.7 s", "0.04 s".
std::string Secs(double s) {
  const double a = std::abs(s);
  if (a >= 10) return absl::StrFormat("%.0f s", s);
  if (a >= 1) return absl::StrFormat("%.1f s", s);
  return absl::StrFormat("%.2f s", s);
}

}  // namespace

std::string_view SlowdownCauseName(SlowdownCause cause) {
  return kCauseNames[static_cast<int>(cause)].name;
}
std::string_view SlowdownCauseText(SlowdownCause cause) {
  return kCauseNames[static_cast<int>(cause)].text;
}

Slowdown SlowdownOf(const RunRecord& run, const Baseline& baseline) {
  Slowdown s;
  const RunFigures r = FiguresOf(run);
  const RunFigures& b = baseline.median;
  s.wall_seconds = r.wall_seconds;
  s.baseline_wall_seconds = b.wall_seconds;
  s.ratio = b.wall_seconds > 0 ? r.wall_seconds / b.wall_seconds : 0;
  s.excess_seconds = r.wall_seconds - b.wall_seconds;
  // Figures summed over tasks become wall time over the tasks busy at once.
  s.parallelism = r.wall_seconds > 0
                      ? std::max(1.0, BusyTaskSeconds(run, r.wall_seconds) / r.wall_seconds)
                      : 1.0;
  auto set = [&](SlowdownCause cause, std::optional<double> v) {
    s.seconds[static_cast<int>(cause)] = v.value_or(0);
  };
  auto per_task = [&](std::optional<double> v) {
    return v ? std::optional<double>(*v / s.parallelism) : std::nullopt;
  };
  std::vector<std::string>& u = s.unobserved;
  set(SlowdownCause::kCpuWait,
      per_task(Growth(r.queued_seconds, b.queued_seconds, SlowdownCause::kCpuWait, u)));
  set(SlowdownCause::kCpuThrottling, Growth(r.throttled_wall_seconds, b.throttled_wall_seconds,
                                            SlowdownCause::kCpuThrottling, u));
  const std::optional<double> reclaim = per_task(Growth(
      r.reclaim_stall_seconds, b.reclaim_stall_seconds, SlowdownCause::kMemoryReclaim, u));
  set(SlowdownCause::kMemoryReclaim, reclaim);
  // Memory pressure counts reclaim stalls too: only what it adds beyond them is a cause.
  if (std::optional<double> p = Growth(r.memory_pressure_seconds, b.memory_pressure_seconds,
                                       SlowdownCause::kMemoryPressure, u)) {
    set(SlowdownCause::kMemoryPressure, std::max(0.0, *p - reclaim.value_or(0)));
  }
  set(SlowdownCause::kIoPressure, Growth(r.io_pressure_seconds, b.io_pressure_seconds,
                                         SlowdownCause::kIoPressure, u));
  set(SlowdownCause::kCpuWork,
      per_task(Growth(r.cpu_seconds, b.cpu_seconds, SlowdownCause::kCpuWork, u)));
  double explained = 0;
  for (int i = 0; i < kSlowdownCauses - 1; ++i) explained += s.seconds[i];
  s.seconds[static_cast<int>(SlowdownCause::kUnexplained)] = s.excess_seconds - explained;
  s.preemptors.assign(run.agent.preemptors.begin(), run.agent.preemptors.end());
  std::stable_sort(s.preemptors.begin(), s.preemptors.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return s;
}

std::string Slowdown::Text() const {
  std::string out = absl::StrFormat(ratio < 2 ? "%.2f× its usual %s" : "%.1f× its usual %s",
                                    ratio, Secs(baseline_wall_seconds));
  if (excess_seconds <= 0) return out;
  // Parts under 1% of the excess are noise in a sentence; the JSON keeps them.
  std::vector<std::string> parts;
  for (int i = 0; i < kSlowdownCauses; ++i) {
    const double v = seconds[i];
    if (std::abs(v) < 0.01 * excess_seconds) continue;
    std::string part = absl::StrCat(Secs(v), " ", std::string(SlowdownCauseText(SlowdownCause(i))));
    if (SlowdownCause(i) == SlowdownCause::kCpuWait && !preemptors.empty()) {
      std::vector<std::string> by;
      for (size_t p = 0; p < preemptors.size() && p < 3; ++p) {
        by.push_back(absl::StrCat(preemptors[p].first, " ", Thousands(preemptors[p].second), "×"));
      }
      absl::StrAppend(&part, " (preempted by ", absl::StrJoin(by, ", "), ")");
    }
    parts.push_back(std::move(part));
  }
  absl::StrAppend(&out, "; of the ", Secs(excess_seconds), " extra, ", absl::StrJoin(parts, ", "));
  return out;
}

}  // namespace stagewatch
