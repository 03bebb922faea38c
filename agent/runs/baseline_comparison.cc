#include "runs/baseline_comparison.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/terminal_text.h"
#include "units.h"

namespace stagewatch {

using nlohmann::json;

BaselineComparison CompareWithBaseline(const RunRecord& run,
                                       const std::vector<RunRecord>& candidates, int wanted) {
  BaselineComparison c;
  c.wanted = wanted;
  c.found = static_cast<int>(candidates.size());
  c.baseline = BaselineOf(candidates);
  if (c.baseline && run.end) c.slowdown = SlowdownOf(run, *c.baseline);
  return c;
}

std::string BaselineComparison::Text(const std::string& stage) const {
  if (!baseline) {
    return absl::StrFormat("no baseline yet: %d clean run%s of %s with these limits before it, "
                           "%d needed", found, found == 1 ? "" : "s", stage, kMinBaselineRuns);
  }
  if (!slowdown) {
    return absl::StrFormat("usually takes %.1f s (median of %d clean runs), p90 %.1f s",
                           baseline->median.wall_seconds, baseline->run_ids.size(),
                           baseline->p90_wall_seconds);
  }
  return slowdown->Text();
}

absl::StatusOr<BaselineComparison> CompareRunWithBaseline(Ledger& ledger, const RunRecord& run,
                                                          const RunsConfig& runs) {
  absl::StatusOr<std::vector<RunRecord>> candidates =
      ledger.CleanRunsBefore(run.start, runs.baseline_runs);
  if (!candidates.ok()) return candidates.status();
  return CompareWithBaseline(run, *candidates, runs.baseline_runs);
}

std::string BaselineDetails(const RunRecord& run, const BaselineComparison& c) {
  std::string out = "baseline:\n";
  if (!c.baseline) return absl::StrCat(out, "  ", TerminalText(c.Text(run.start.stage)), "\n");
  const Baseline& b = *c.baseline;
  absl::StrAppendFormat(&out,
                        "  %-14s median of %d clean runs of %s with these limits (%s ... %s)\n",
                        "runs", b.run_ids.size(), TerminalText(run.start.stage),
                        TerminalText(b.run_ids.back()), TerminalText(b.run_ids.front()));
  absl::StrAppendFormat(&out, "  %-14s %s, p90 %s\n", "usual wall",
                        FormatSeconds(b.median.wall_seconds), FormatSeconds(b.p90_wall_seconds));
  if (!c.slowdown) return out;
  const Slowdown& s = *c.slowdown;
  absl::StrAppendFormat(&out, "  %-14s %s: %.2f× the usual, %s %s\n", "this run",
                        FormatSeconds(s.wall_seconds), s.ratio,
                        FormatSeconds(std::abs(s.excess_seconds)),
                        s.excess_seconds >= 0 ? "extra" : "less");
  for (int i = 0; i < kSlowdownCauses; ++i) {
    absl::StrAppendFormat(&out, "  %-14s %s\n", std::string(SlowdownCauseName(SlowdownCause(i))),
                          FormatSeconds(s.seconds[i]));
  }
  if (!s.unobserved.empty()) {
    absl::StrAppendFormat(&out, "  %-14s %s\n", "not observed", absl::StrJoin(s.unobserved, ", "));
  }
  return out;
}

std::string VerdictWithBaseline(const Verdict& verdict, const BaselineComparison& comparison,
                                const std::string& stage) {
  const bool replaces = comparison.slowdown && (verdict.kind == VerdictKind::kClean ||
                                                verdict.kind == VerdictKind::kDegraded);
  if (replaces) {
    return absl::StrCat(std::string(VerdictName(verdict.kind)), ": ", comparison.slowdown->Text());
  }
  return absl::StrCat(verdict.Summary(), "; ", comparison.Text(stage));
}

json BaselineComparison::ToJson() const {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json out = {{"wanted_runs", wanted}, {"found_runs", found}, {"min_runs", kMinBaselineRuns}};
  if (!baseline) {
    out["baseline"] = nullptr;
    return out;
  }
  const RunFigures& m = baseline->median;
  out["baseline"] = {
      {"runs", baseline->run_ids},
      {"wall_seconds", m.wall_seconds},
      {"p90_wall_seconds", baseline->p90_wall_seconds},
      {"cpu_seconds", opt(m.cpu_seconds)},
      {"queued_seconds", opt(m.queued_seconds)},
      {"throttled_wall_seconds", opt(m.throttled_wall_seconds)},
      {"reclaim_stall_seconds", opt(m.reclaim_stall_seconds)},
      {"memory_pressure_seconds", opt(m.memory_pressure_seconds)},
      {"io_pressure_seconds", opt(m.io_pressure_seconds)},
      {"memory_peak_bytes", opt(m.memory_peak_bytes)},
  };
  if (!slowdown) {
    out["slowdown"] = nullptr;
    return out;
  }
  out["slowdown"] = SlowdownToJson(*slowdown);
  return out;
}

json SlowdownToJson(const Slowdown& s) {
  json causes = json::object();
  for (int i = 0; i < kSlowdownCauses; ++i) {
    causes[std::string(SlowdownCauseName(SlowdownCause(i)))] = s.seconds[i];
  }
  json preemptors = json::array();
  for (const auto& [stage, n] : s.preemptors) {
    preemptors.push_back({{"stage", stage}, {"times", n}});
  }
  return {{"ratio", s.ratio},
          {"excess_seconds", s.excess_seconds},
          {"parallelism", s.parallelism},
          {"seconds_by_cause", causes},
          {"preemptors", preemptors},
          {"not_observed", s.unobserved},
          {"text", s.Text()}};
}

}  // namespace stagewatch
