#include "runs/pipeline_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/baseline.h"
#include "runs/percentile.h"
#include "runs/pipeline_run.h"
#include "runs/runs_report.h"
#include "runs/terminal_text.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;

// The chain of runs that held the night's end: from the run that ended last, back through the
// run that ended last before each one started (what it waited for, in a pipeline of steps).
void MarkCriticalPath(std::vector<PipelineRunMember>& runs) {
  auto ended_last = [&](std::optional<absl::Time> by) -> PipelineRunMember* {
    PipelineRunMember* best = nullptr;
    for (PipelineRunMember& m : runs) {
      if (!m.run.end || (by && m.run.end->end > *by)) continue;
      if (!best || m.run.end->end > best->run.end->end) best = &m;
    }
    return best;
  };
  for (PipelineRunMember* m = ended_last(std::nullopt); m != nullptr && !m->on_critical_path;
       m = ended_last(m->run.start.start)) {
    m->on_critical_path = true;
  }
}

std::vector<LongerRun> MadeLonger(const std::vector<PipelineRunMember>& runs) {
  std::vector<LongerRun> out;
  for (const PipelineRunMember& m : runs) {
    const std::optional<Slowdown>& s = m.baseline.slowdown;
    // An excess under 1% of the run's usual wall is noise, not a cause of a longer night.
    if (!m.on_critical_path || !s || s->excess_seconds <= 0.01 * s->baseline_wall_seconds) {
      continue;
    }
    LongerRun l{.id = m.run.start.id, .stage = m.run.start.stage,
                .excess_seconds = s->excess_seconds, .ratio = s->ratio};
    for (int i = 0; i < kSlowdownCauses; ++i) {
      if (s->seconds[i] > l.largest_cause_seconds) {
        l.largest_cause = SlowdownCause(i);
        l.largest_cause_seconds = s->seconds[i];
      }
    }
    out.push_back(std::move(l));
  }
  std::stable_sort(out.begin(), out.end(), [](const LongerRun& a, const LongerRun& b) {
    return a.excess_seconds > b.excess_seconds;
  });
  return out;
}

// The pipeline's earlier nights whose runs all ended clean, newest first, up to `wanted`.
absl::StatusOr<NightBaseline> BaselineNights(Ledger& ledger, const std::string& pipeline,
                                             absl::Time before, int wanted) {
  NightBaseline b{.wanted = wanted};
  std::vector<double> walls;
  PipelineRunFilter filter{.pipeline = pipeline, .started_before = before, .limit = 100};
  for (int scanned = 0; scanned < kNightBaselineScan;) {
    absl::StatusOr<PipelineRunPage> page = ledger.ListPipelineRuns(filter);
    if (!page.ok()) return page.status();
    for (const PipelineRunSummary& p : page->runs) {
      ++scanned;
      if (p.verdict != VerdictKind::kClean || !p.last_end) continue;
      b.nights.push_back(p.pipeline_run);
      walls.push_back(absl::ToDoubleSeconds(*p.last_end - p.first_start));
      if (static_cast<int>(b.nights.size()) == wanted) break;
    }
    if (!page->more || static_cast<int>(b.nights.size()) == wanted) break;
    filter.after = {{pipeline, page->runs.back().pipeline_run}};
  }
  if (static_cast<int>(walls.size()) >= kMinBaselineRuns) {
    b.median_wall_seconds = Percentile(walls, 0.5);
  }
  return b;
}

std::string Time(absl::Time t) { return FormatRfc3339(t); }

json OptTime(const std::optional<absl::Time>& t) { return t ? json(Time(*t)) : json(nullptr); }

std::string Plural(size_t n, const char* noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

std::string DeadlineText(const PipelineDeadline& d, const std::optional<absl::Time>& last_end) {
  std::string out = absl::StrCat(FormatTimeOfDay(d.time_of_day), " local (", Time(d.at), "): ");
  if (!d.met) return out + "not yet";
  if (!*d.met) {
    if (!last_end) return out + "missed, still running";
    return absl::StrCat(out, "missed by ", FormatSeconds(absl::ToDoubleSeconds(*last_end - d.at)));
  }
  return absl::StrCat(out, "met, ", FormatSeconds(absl::ToDoubleSeconds(d.at - *last_end)),
                      " to spare");
}

std::string LongerText(const LongerRun& l) {
  return absl::StrFormat("+%s (%.2f× its usual); largest cause: %s %s",
                         FormatSeconds(l.excess_seconds), l.ratio,
                         std::string(SlowdownCauseText(l.largest_cause)),
                         FormatSeconds(l.largest_cause_seconds));
}

}  // namespace

std::optional<double> PipelineRunReport::WallSeconds() const {
  if (!last_end) return std::nullopt;
  return absl::ToDoubleSeconds(*last_end - first_start);
}

std::string PipelineRunReport::NoneLongerText() const {
  int critical = 0, without = 0;
  for (const PipelineRunMember& m : runs) {
    if (!m.on_critical_path) continue;
    ++critical;
    if (!m.baseline.slowdown) ++without;
  }
  if (without == 0) return "no run on its critical path took longer than usual";
  if (without == critical) return "not known yet: no run on its critical path has a baseline";
  return absl::StrFormat("no run on its critical path took longer than usual, of those with a "
                         "baseline (%d without one yet)", without);
}

std::string PipelineRunReport::WallText() const {
  const size_t found = baseline.nights.size();
  if (!baseline.median_wall_seconds) {
    return absl::StrFormat("no baseline yet: %s of %s before it, %d needed",
                           Plural(found, "clean night"), pipeline, kMinBaselineRuns);
  }
  const double usual = *baseline.median_wall_seconds;
  const std::string of = absl::StrFormat("median of %s", Plural(found, "clean night"));
  const std::optional<double> wall = WallSeconds();
  if (!wall) return absl::StrFormat("usually takes %s (%s)", FormatSeconds(usual), of);
  if (usual <= 0) return absl::StrFormat("its usual nights take no time (%s)", of);
  return absl::StrFormat("%.2f× its usual %s (%s)", *wall / usual, FormatSeconds(usual), of);
}

absl::StatusOr<std::optional<PipelineRunReport>> ReportPipelineRun(
    Ledger& ledger, const std::string& pipeline, const std::string& pipeline_run,
    const RunsConfig& runs_config, const PipelineConfig* config, absl::Time now,
    absl::TimeZone zone) {
  absl::StatusOr<std::vector<RunRecord>> runs = ledger.PipelineRunRuns(pipeline, pipeline_run);
  if (!runs.ok()) return runs.status();
  if (runs->empty()) return std::nullopt;
  PipelineRunReport r{.pipeline = pipeline, .pipeline_run = pipeline_run};
  r.first_start = runs->front().start.start;
  bool open = false;
  VerdictKind worst = VerdictKind::kClean;
  for (RunRecord& run : *runs) {
    absl::StatusOr<BaselineComparison> baseline = CompareRunWithBaseline(ledger, run, runs_config);
    if (!baseline.ok()) return baseline.status();
    Verdict verdict = JudgeRun(run, runs_config);
    worst = std::max(worst, verdict.kind);
    if (run.end) {
      r.last_end = r.last_end ? std::max(*r.last_end, run.end->end) : run.end->end;
    } else {
      open = true;
    }
    r.runs.push_back({.run = std::move(run), .verdict = std::move(verdict),
                      .baseline = *std::move(baseline)});
  }
  r.verdict = open ? VerdictKind::kRunning : worst;
  if (open) r.last_end.reset();
  absl::StatusOr<NightBaseline> nights =
      BaselineNights(ledger, pipeline, r.first_start, runs_config.baseline_runs);
  if (!nights.ok()) return nights.status();
  r.baseline = *std::move(nights);
  if (config && config->deadline) {
    PipelineDeadline d{.time_of_day = *config->deadline,
                       .at = NightDeadline(r.first_start, config->night_starts, *config->deadline,
                                           zone)};
    if (r.last_end) {
      d.met = *r.last_end <= d.at;
    } else if (now > d.at) {
      d.met = false;
    }
    r.deadline = d;
  }
  if (!open) {
    MarkCriticalPath(r.runs);
    r.made_longer = MadeLonger(r.runs);
  }
  return r;
}

absl::StatusOr<std::string> PipelineOfRun(Ledger& ledger, const std::string& pipeline,
                                          const std::string& pipeline_run) {
  absl::StatusOr<std::vector<std::string>> pipelines = ledger.PipelinesWithRun(pipeline_run);
  if (!pipelines.ok()) return pipelines.status();
  const std::vector<std::string>& have = *pipelines;
  if (!pipeline.empty()) {
    if (std::find(have.begin(), have.end(), pipeline) != have.end()) return pipeline;
    const std::string where = have.empty()
                                  ? "; see `stagewatch pipelines list`"
                                  : absl::StrCat("; it is a run of ", absl::StrJoin(have, ", "));
    return absl::NotFoundError(
        absl::StrFormat("no pipeline run \"%s\" of pipeline %s in the ledger \"%s\"%s",
                        pipeline_run, pipeline, ledger.path(), where));
  }
  if (have.empty()) {
    return absl::NotFoundError(absl::StrFormat(
        "no pipeline run \"%s\" in the ledger \"%s\"; see `stagewatch pipelines list`",
        pipeline_run, ledger.path()));
  }
  if (have.size() > 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "pipelines %s each have a pipeline run \"%s\"; name one with --pipeline",
        absl::StrJoin(have, ", "), pipeline_run));
  }
  return have.front();
}

json PipelineRunSummaryJson(const PipelineRunSummary& p) {
  const bool ended = p.open_runs == 0 && p.last_end;
  return {{"pipeline", p.pipeline},
          {"pipeline_run", p.pipeline_run},
          {"verdict", std::string(VerdictName(p.verdict))},
          {"first_start", Time(p.first_start)},
          {"last_end", ended ? json(Time(*p.last_end)) : json(nullptr)},
          {"wall_seconds", ended ? json(absl::ToDoubleSeconds(*p.last_end - p.first_start))
                                 : json(nullptr)},
          {"runs", p.runs},
          {"open_runs", p.open_runs}};
}

json PipelineRunReportJson(const PipelineRunReport& r, const RunsConfig& config) {
  const std::optional<double> wall = r.WallSeconds();
  const std::optional<double>& usual = r.baseline.median_wall_seconds;
  json baseline = {{"wanted_nights", r.baseline.wanted},
                   {"found_nights", r.baseline.nights.size()},
                   {"min_nights", kMinBaselineRuns},
                   {"nights", r.baseline.nights},
                   {"median_wall_seconds", usual ? json(*usual) : json(nullptr)},
                   {"ratio", wall && usual && *usual > 0 ? json(*wall / *usual) : json(nullptr)},
                   {"text", r.WallText()}};
  json deadline = nullptr;
  if (r.deadline) {
    deadline = {{"time_of_day", FormatTimeOfDay(r.deadline->time_of_day)},
                {"at", Time(r.deadline->at)},
                {"met", r.deadline->met ? json(*r.deadline->met) : json(nullptr)}};
  }
  json longer = json::array();
  for (const LongerRun& l : r.made_longer) {
    longer.push_back({{"id", l.id},
                      {"stage", l.stage},
                      {"excess_seconds", l.excess_seconds},
                      {"ratio", l.ratio},
                      {"largest_cause", std::string(SlowdownCauseName(l.largest_cause))},
                      {"largest_cause_seconds", l.largest_cause_seconds}});
  }
  json runs = json::array();
  for (const PipelineRunMember& m : r.runs) {
    json run = RunToJson(m.run, config);
    run["baseline"] = m.baseline.ToJson();
    run["on_critical_path"] = m.on_critical_path;
    runs.push_back(std::move(run));
  }
  return {{"pipeline", r.pipeline},
          {"pipeline_run", r.pipeline_run},
          {"verdict", std::string(VerdictName(r.verdict))},
          {"first_start", Time(r.first_start)},
          {"last_end", OptTime(r.last_end)},
          {"wall_seconds", wall ? json(*wall) : json(nullptr)},
          {"baseline", baseline},
          {"deadline", deadline},
          {"made_longer", longer},
          {"runs", runs}};
}

std::string PipelineRunsTable(const std::vector<PipelineRunSummary>& runs) {
  std::vector<std::vector<std::string>> rows = {
      {"PIPELINE", "PIPELINE RUN", "STARTED", "WALL", "RUNS", "VERDICT"}};
  for (const PipelineRunSummary& p : runs) {
    const bool ended = p.open_runs == 0 && p.last_end;
    rows.push_back(
        {p.pipeline, p.pipeline_run, Time(p.first_start),
         ended ? FormatSeconds(absl::ToDoubleSeconds(*p.last_end - p.first_start)) : "-",
         p.open_runs > 0 ? absl::StrCat(p.runs, " (", p.open_runs, " open)")
                         : absl::StrCat(p.runs),
         std::string(VerdictName(p.verdict))});
  }
  return TextTable(rows);
}

std::string PipelineRunText(const PipelineRunReport& r) {
  const std::string verdict(VerdictName(r.verdict));
  std::string out = TerminalText(absl::StrFormat("pipeline run %s of %s: %s", r.pipeline_run,
                                                 r.pipeline, verdict)) + "\n";
  std::vector<std::string> stages;
  for (const PipelineRunMember& m : r.runs) stages.push_back(m.run.start.stage);
  std::vector<std::vector<std::string>> rows;
  auto row = [&](std::string key, std::string value) { rows.push_back({"  " + key, value}); };
  row("runs", absl::StrCat(r.runs.size(), ": ", absl::StrJoin(stages, ", ")));
  row("started", Time(r.first_start));
  const std::optional<double> wall = r.WallSeconds();
  if (wall) {
    row("ended", Time(*r.last_end));
    row("wall", absl::StrCat(FormatSeconds(*wall), ": ", r.WallText()));
  } else {
    row("wall", absl::StrCat("running; ", r.WallText()));
  }
  if (r.deadline) row("deadline", DeadlineText(*r.deadline, r.last_end));
  out += TextTable(rows);
  if (wall) {
    out += "made the night longer:\n";
    if (r.made_longer.empty()) absl::StrAppend(&out, "  ", r.NoneLongerText(), "\n");
    std::vector<std::vector<std::string>> longer;
    for (const LongerRun& l : r.made_longer) {
      longer.push_back({absl::StrCat("  ", l.stage, " (", l.id, ")"), LongerText(l)});
    }
    out += TextTable(longer);
  }
  out += "runs:\n";
  std::vector<std::vector<std::string>> table = {
      {"  RUN", "STAGE", "START", "WALL", "VERDICT", "AGAINST ITS BASELINE"}};
  for (const PipelineRunMember& m : r.runs) {
    const std::optional<absl::Duration> run_wall = m.run.Wall();
    table.push_back(
        {absl::StrCat("  ", m.run.start.id, m.on_critical_path ? " *" : ""), m.run.start.stage,
         absl::StrCat("+", FormatSeconds(absl::ToDoubleSeconds(m.run.start.start - r.first_start))),
         run_wall ? FormatSeconds(absl::ToDoubleSeconds(*run_wall)) : "-",
         std::string(VerdictName(m.verdict.kind)), m.baseline.Text(m.run.start.stage)});
  }
  out += TextTable(table);
  if (wall) out += "  * on the night's critical path: its end held the night's end back\n";
  return out;
}

}  // namespace stagewatch
