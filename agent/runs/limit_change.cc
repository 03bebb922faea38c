#include "runs/limit_change.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/advisor.h"
#include "runs/percentile.h"
#include "runs/rank_test.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;

template <typename T>
std::optional<double> OptionalDouble(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

MedianChange ChangeOfMedians(const std::vector<double>& before, const std::vector<double>& after) {
  MedianChange c{Median(before), Median(after), std::nullopt};
  if (c.before != 0) c.percent = (c.after - c.before) / c.before * 100;
  return c;
}

// One limit as `advise` and `runs show` print it, and as JSON names it.
struct LimitField {
  const char* flag;
  const char* json_key;
  std::function<std::optional<double>(const RunLimits&)> get;
  std::function<std::string(double)> text;
};

const std::vector<LimitField>& LimitFields() {
  static const std::vector<LimitField> fields = {
      {"memory-max", "memory_max_bytes",
       [](const RunLimits& l) { return OptionalDouble(l.memory_max_bytes); },
       [](double v) { return FormatBytes(v); }},
      {"memory-high", "memory_high_bytes",
       [](const RunLimits& l) { return OptionalDouble(l.memory_high_bytes); },
       [](double v) { return FormatBytes(v); }},
      {"cpu-max", "cpu_max_cores", [](const RunLimits& l) { return l.cpu_max_cores; },
       [](double v) { return absl::StrFormat("%g", v); }},
      {"cpu-weight", "cpu_weight",
       [](const RunLimits& l) { return OptionalDouble(l.cpu_weight); },
       [](double v) { return absl::StrFormat("%.0f", v); }},
  };
  return fields;
}

// The cpuset, a limit that is a list rather than a figure.
struct ListLimitField {
  const char* flag;
  const char* json_key;
  std::optional<std::string> RunLimits::*member;
};

constexpr ListLimitField kListLimitFields[] = {
    {"cpuset-cpus", "cpuset_cpus", &RunLimits::cpuset_cpus},
    {"cpuset-mems", "cpuset_mems", &RunLimits::cpuset_mems},
};

// "+4.0%"; both medians when the one before is 0 (no percentage of it).
std::string ChangeText(const MedianChange& c, const std::function<std::string(double)>& text) {
  if (!c.percent) return absl::StrCat(text(c.before), " → ", text(c.after));
  return absl::StrFormat("%+.1f%%", *c.percent);
}

json MedianJson(const MedianChange& c) {
  return {{"median_before", c.before}, {"median_after", c.after},
          {"change_percent", c.percent ? json(*c.percent) : json(nullptr)}};
}

}  // namespace

void PeriodSamples::Add(const RunRecord& r) {
  if (const auto wall = r.Wall()) wall_seconds.push_back(absl::ToDoubleSeconds(*wall));
  if (r.end && r.end->facts.memory_peak_bytes) {
    peak_bytes.push_back(double(*r.end->facts.memory_peak_bytes));
  }
  for (const auto& [name, value] : r.results) results[name].push_back(value);
}

std::vector<LimitChange> CompareLimitChanges(const std::vector<LimitPeriod>& periods) {
  std::vector<LimitChange> changes;
  for (size_t i = 1; i < periods.size(); ++i) {
    const LimitPeriod& b = periods[i - 1];
    const LimitPeriod& a = periods[i];
    if (b.limits == a.limits) continue;
    LimitChange& c = changes.emplace_back();
    c.before = b.limits;
    c.after = a.limits;
    c.at = a.first_start;
    c.runs_before = static_cast<int>(b.samples.wall_seconds.size());
    c.runs_after = static_cast<int>(a.samples.wall_seconds.size());
    c.enough_runs = c.runs_before >= kLimitChangeMinRuns && c.runs_after >= kLimitChangeMinRuns;
    if (c.enough_runs) {
      c.wall = ChangeOfMedians(b.samples.wall_seconds, a.samples.wall_seconds);
      const RankTestResult test = MannWhitneyU(b.samples.wall_seconds, a.samples.wall_seconds);
      c.wall_p = test.p;
      c.wall_p_exact = test.exact;
    }
    c.peaks_before = static_cast<int>(b.samples.peak_bytes.size());
    c.peaks_after = static_cast<int>(a.samples.peak_bytes.size());
    if (c.peaks_before >= kLimitChangeMinRuns && c.peaks_after >= kLimitChangeMinRuns) {
      c.peak = ChangeOfMedians(b.samples.peak_bytes, a.samples.peak_bytes);
    }
    for (const auto& [name, before] : b.samples.results) {
      const auto after = a.samples.results.find(name);
      if (after != a.samples.results.end()) {
        c.results[name] = ChangeOfMedians(before, after->second);
      }
    }
  }
  return changes;
}

std::string LimitChangeLine(const LimitChange& c) {
  std::vector<std::string> changed, figures;
  for (const LimitField& f : LimitFields()) {
    const std::optional<double> before = f.get(c.before), after = f.get(c.after);
    if (before == after) continue;
    changed.push_back(absl::StrCat(f.flag, " ", before ? f.text(*before) : "none", " → ",
                                   after ? f.text(*after) : "none"));
  }
  for (const ListLimitField& f : kListLimitFields) {
    const std::optional<std::string>& before = c.before.*f.member;
    const std::optional<std::string>& after = c.after.*f.member;
    if (before == after) continue;
    changed.push_back(absl::StrCat(f.flag, " ", before.value_or("none"), " → ",
                                   after.value_or("none")));
  }
  if (c.wall) {
    figures.push_back(absl::StrFormat("wall %s (p %.2g over %d+%d runs)",
                                      ChangeText(*c.wall, FormatSeconds), c.wall_p, c.runs_before,
                                      c.runs_after));
  } else {
    figures.push_back(absl::StrFormat("too few runs to compare (%d+%d; %d a side needed)",
                                      c.runs_before, c.runs_after, kLimitChangeMinRuns));
  }
  if (c.peak) {
    figures.push_back("peak " + ChangeText(*c.peak, [](double b) { return FormatBytes(b); }));
  } else if (c.enough_runs) {
    figures.push_back(absl::StrFormat("peak: too few runs with one (%d+%d)", c.peaks_before,
                                      c.peaks_after));
  }
  for (const auto& [name, m] : c.results) {
    figures.push_back(absl::StrCat(name, " ", FormatExact(m.before), " → ", FormatExact(m.after)));
  }
  return absl::StrCat(absl::StrJoin(changed, ", "), ": ", absl::StrJoin(figures, ", "));
}

json LimitChangeToJson(const LimitChange& c) {
  json changed = json::array();
  for (const LimitField& f : LimitFields()) {
    const std::optional<double> before = f.get(c.before), after = f.get(c.after);
    if (before == after) continue;
    changed.push_back({{"limit", f.json_key},
                       {"before", before ? json(*before) : json(nullptr)},
                       {"after", after ? json(*after) : json(nullptr)}});
  }
  for (const ListLimitField& f : kListLimitFields) {
    const std::optional<std::string>& before = c.before.*f.member;
    const std::optional<std::string>& after = c.after.*f.member;
    if (before == after) continue;
    changed.push_back({{"limit", f.json_key},
                       {"before", before ? json(*before) : json(nullptr)},
                       {"after", after ? json(*after) : json(nullptr)}});
  }
  json wall = nullptr;
  if (c.wall) {
    wall = MedianJson(*c.wall);
    wall["p_value"] = c.wall_p;
    wall["p_exact"] = c.wall_p_exact;
    wall["test"] = "mann-whitney-u, two-sided";
  }
  json results = json::object();
  for (const auto& [name, m] : c.results) results[name] = MedianJson(m);
  return {{"at", FormatRfc3339(c.at)},
          {"changed", changed},
          {"runs_before", c.runs_before},
          {"runs_after", c.runs_after},
          {"enough_runs", c.enough_runs},
          {"wall_seconds", wall},
          {"peak_runs_before", c.peaks_before},
          {"peak_runs_after", c.peaks_after},
          {"memory_peak_bytes", c.peak ? MedianJson(*c.peak) : json(nullptr)},
          {"results", results},
          {"text", LimitChangeLine(c)}};
}

}  // namespace stagewatch
