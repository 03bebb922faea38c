#include "runs/advise_bounds.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "units.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20;

uint64_t CeilMiB(double bytes) { return uint64_t(std::ceil(bytes / kMiB)) * kMiB; }
double CeilCores(double cores) { return std::ceil(cores * 20 - 1e-9) / 20; }  // 0.05 CPUs

}  // namespace

AdviceBounds BoundsOf(const Advice& a) {
  AdviceBounds b;
  // Lower: a smaller limit would have killed a run seen (or, after an OOM kill at L, it needed
  // more than L). Upper: the target could be short by about one run in N, so 1 + 1/N of it;
  // the band narrows as runs add up, as the VPA's confidence interval does with history.
  const int n = std::max(a.runs_with_peak, 1);
  auto& m = b.memory_bytes;
  m.lower = CeilMiB(double(a.largest_peak_bytes));
  m.lower_why = absl::StrFormat("the largest peak of %d runs, %s: a run needed it",
                                a.runs_with_peak, FormatBytes(a.largest_peak_bytes));
  if (a.oom_limit_bytes && *a.oom_limit_bytes + kMiB > m.lower) {
    m.lower = CeilMiB(double(*a.oom_limit_bytes + 1));
    m.lower_why = absl::StrFormat("a run was OOM-killed at %s: it needed more",
                                  FormatBytes(*a.oom_limit_bytes));
  }
  m.target = std::max(a.memory_max_bytes, m.lower);
  m.target_why = "the recommendation, derived above";
  m.upper = CeilMiB(double(m.target) * (1 + 1.0 / n));
  m.upper_why = absl::StrFormat("the target × (1 + 1/%d runs): fewer runs, a wider band", n);
  if (a.cpu_max_cores && a.cpu_percentile_cores) {
    Bounded<double> c;
    c.lower = CeilCores(*a.cpu_percentile_cores);
    c.lower_why = absl::StrFormat("p%.0f of the runs' p95 CPU use, %.2f CPUs, without margin",
                                  a.percentile * 100, *a.cpu_percentile_cores);
    c.target = std::max(*a.cpu_max_cores, c.lower);
    c.target_why = "the recommendation";
    c.upper = CeilCores(c.target * (1 + 1.0 / std::max(a.runs_counted, 1)));
    c.upper_why = absl::StrFormat("the target × (1 + 1/%d runs)", std::max(a.runs_counted, 1));
    b.cpu_cores = c;
  }
  return b;
}

std::string BoundsText(const AdviceBounds& b) {
  const auto& m = b.memory_bytes;
  std::string out = absl::StrFormat(
      "memory-max: lower %s, target %s, upper %s\n"
      "  lower:  %s\n  target: %s\n  upper:  %s\n",
      FormatBytes(m.lower), FormatBytes(m.target), FormatBytes(m.upper), m.lower_why,
      m.target_why, m.upper_why);
  if (b.cpu_cores) {
    const auto& c = *b.cpu_cores;
    absl::StrAppendFormat(&out,
                          "cpu-max: lower %.2f, target %.2f, upper %.2f\n"
                          "  lower:  %s\n  target: %s\n  upper:  %s\n",
                          c.lower, c.target, c.upper, c.lower_why, c.target_why, c.upper_why);
  }
  return out;
}

nlohmann::json BoundsToJson(const AdviceBounds& b) {
  auto bound = [](const auto& x) {
    return nlohmann::json{{"lower", x.lower}, {"target", x.target}, {"upper", x.upper},
                          {"lower_evidence", x.lower_why}, {"target_evidence", x.target_why},
                          {"upper_evidence", x.upper_why}};
  };
  return {{"memory_max_bytes", bound(b.memory_bytes)},
          {"cpu_max_cores", b.cpu_cores ? bound(*b.cpu_cores) : nlohmann::json(nullptr)}};
}

}  // namespace stagewatch
