#include "runs/run_comparison.h"

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/baseline.h"
#include "runs/baseline_comparison.h"
#include "runs/runs_report.h"
#include "runs/terminal_text.h"
#include "runs/verdict.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;

// One compared figure: its name, how it reads, and its value in a run.
struct Figure {
  const char* name;
  std::function<std::string(double)> format;
  std::function<std::optional<double>(const RunFigures&)> of;
};

std::string Bytes(double b) { return FormatBytes(b); }
std::string Seconds(double s) { return FormatSeconds(s); }

const std::vector<Figure>& Figures() {
  static const std::vector<Figure> kFigures = {
      {"wall_seconds", Seconds, [](const RunFigures& f) { return f.wall_seconds; }},
      {"cpu_seconds", Seconds, [](const RunFigures& f) { return f.cpu_seconds; }},
      {"queued_seconds", Seconds, [](const RunFigures& f) { return f.queued_seconds; }},
      {"throttled_wall_seconds", Seconds,
       [](const RunFigures& f) { return f.throttled_wall_seconds; }},
      {"reclaim_stall_seconds", Seconds,
       [](const RunFigures& f) { return f.reclaim_stall_seconds; }},
      {"memory_pressure_seconds", Seconds,
       [](const RunFigures& f) { return f.memory_pressure_seconds; }},
      {"io_pressure_seconds", Seconds, [](const RunFigures& f) { return f.io_pressure_seconds; }},
      {"memory_peak_bytes", Bytes, [](const RunFigures& f) { return f.memory_peak_bytes; }},
  };
  return kFigures;
}

std::set<std::string> ResultNames(const RunRecord& a, const RunRecord& b) {
  std::set<std::string> names;
  for (const auto& [name, v] : a.results) names.insert(name);
  for (const auto& [name, v] : b.results) names.insert(name);
  return names;
}

std::optional<double> ResultOf(const RunRecord& r, const std::string& name) {
  auto it = r.results.find(name);
  return it == r.results.end() ? std::nullopt : std::optional<double>(it->second);
}

json Opt(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::optional<Slowdown> SlowdownBetween(const RunRecord& a, const RunRecord& b) {
  if (!a.end || !b.end) return std::nullopt;
  Baseline as_baseline;
  as_baseline.run_ids = {a.start.id};
  as_baseline.median = FiguresOf(a);
  as_baseline.p90_wall_seconds = as_baseline.median.wall_seconds;
  return SlowdownOf(b, as_baseline);
}

std::string RunComparisonText(const RunRecord& a, const RunRecord& b, const RunsConfig& config) {
  std::vector<std::vector<std::string>> rows = {{"", "A", "B", "B - A"}};
  rows.push_back({"run", a.start.id, b.start.id, ""});
  rows.push_back({"stage", a.start.stage, b.start.stage, ""});
  rows.push_back({"verdict", std::string(VerdictName(JudgeRun(a, config).kind)),
                  std::string(VerdictName(JudgeRun(b, config).kind)), ""});
  rows.push_back({"limits", LimitsText(a.start.limits), LimitsText(b.start.limits), ""});
  const RunFigures fa = FiguresOf(a), fb = FiguresOf(b);
  for (const Figure& f : Figures()) {
    const std::optional<double> va = f.of(fa), vb = f.of(fb);
    std::string diff = "-";
    if (va && vb) {
      diff = absl::StrCat(*vb >= *va ? "+" : "-", f.format(std::abs(*vb - *va)));
      if (*va > 0) absl::StrAppendFormat(&diff, " (%.2f×)", *vb / *va);
    }
    rows.push_back({f.name, va ? f.format(*va) : "-", vb ? f.format(*vb) : "-", diff});
  }
  for (const std::string& name : ResultNames(a, b)) {
    const std::optional<double> va = ResultOf(a, name), vb = ResultOf(b, name);
    rows.push_back({absl::StrCat("result ", name), va ? FormatExact(*va) : "-",
                    vb ? FormatExact(*vb) : "-", va && vb ? FormatExact(*vb - *va) : "-"});
  }
  std::vector<size_t> width(4, 0);
  for (auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = TerminalText(row[i]);
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i], std::string(width[i] - row[i].size() + 2, ' '));
    }
    absl::StrAppend(&out, line.substr(0, line.find_last_not_of(' ') + 1), "\n");
  }
  if (std::optional<Slowdown> s = SlowdownBetween(a, b)) {
    absl::StrAppend(&out, "B against A: ", TerminalText(s->Text()), "\n");
  }
  return out;
}

json RunComparisonJson(const RunRecord& a, const RunRecord& b, const RunsConfig& config) {
  const RunFigures fa = FiguresOf(a), fb = FiguresOf(b);
  json figures = json::object();
  for (const Figure& f : Figures()) {
    const std::optional<double> va = f.of(fa), vb = f.of(fb);
    figures[f.name] = {{"a", Opt(va)}, {"b", Opt(vb)},
                       {"difference", va && vb ? json(*vb - *va) : json(nullptr)}};
  }
  json results = json::object();
  for (const std::string& name : ResultNames(a, b)) {
    const std::optional<double> va = ResultOf(a, name), vb = ResultOf(b, name);
    results[name] = {{"a", Opt(va)}, {"b", Opt(vb)},
                     {"difference", va && vb ? json(*vb - *va) : json(nullptr)}};
  }
  json out = {{"a", RunToJson(a, config)}, {"b", RunToJson(b, config)},
              {"figures", figures}, {"results", results}, {"slowdown", nullptr}};
  if (std::optional<Slowdown> s = SlowdownBetween(a, b)) out["slowdown"] = SlowdownToJson(*s);
  return out;
}

}  // namespace stagewatch
