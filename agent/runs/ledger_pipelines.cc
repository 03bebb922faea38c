// Pipeline runs read from the ledger: the list, newest first, grouped on the index
// runs_by_pipeline_run (a page's groups from the index alone, then each group's figures from
// its rows); one pipeline run's runs; and where a run's points show pressure, for the timeline.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_sqlite.h"
#include "units.h"

namespace stagewatch {
namespace {

using ledger_sqlite::BindAll;
using ledger_sqlite::OptReal;

// A stored verdict as a rank of how bad it is, in SQL: running 0, then as VerdictKind orders
// them (clean 1 ... interrupted 4).
constexpr char kVerdictRank[] =
    "CASE verdict WHEN 'clean' THEN 1 WHEN 'unobserved' THEN 2 WHEN 'degraded' THEN 3 "
    "WHEN 'interrupted' THEN 4 ELSE 0 END";

VerdictKind Worse(VerdictKind a, VerdictKind b) { return std::max(a, b); }

}  // namespace

absl::StatusOr<PipelineRunPage> Ledger::ListPipelineRuns(const PipelineRunFilter& filter) {
  const int want = std::max(filter.limit, 0) + 1;  // one more tells whether more match
  std::string where = "pipeline_run != ''";
  std::vector<std::string> where_args, having, having_args;
  if (!filter.pipeline.empty()) {
    absl::StrAppend(&where, " AND pipeline = ?");
    where_args.push_back(filter.pipeline);
  }
  if (filter.started_before) {
    having.push_back("first < ?");
    having_args.push_back(FormatRfc3339(*filter.started_before));
  }
  PipelineRunPage page;
  try {
    if (filter.after) {
      const auto& [pipeline, run] = *filter.after;
      SQLite::Statement cursor(*db_, "SELECT min(start_time) FROM runs WHERE pipeline = ? AND "
                                     "pipeline_run = ? AND pipeline_run != ''");
      BindAll(cursor, pipeline, run);
      if (!cursor.executeStep() || cursor.isColumnNull(0)) {
        return absl::NotFoundError(absl::StrFormat(
            "no pipeline run \"%s\" of %s in the ledger to list the pipeline runs after; start "
            "from the newest", run, pipeline));
      }
      // After it in newest-first order.
      having.push_back("(first, pipeline, pipeline_run) < (?, ?, ?)");
      having_args.insert(having_args.end(), {cursor.getColumn(0).getText(), pipeline, run});
    }
    SQLite::Statement groups(
        *db_, absl::StrCat("SELECT pipeline, pipeline_run, min(start_time) AS first FROM runs "
                           "INDEXED BY runs_by_pipeline_run WHERE ", where,
                           " GROUP BY pipeline, pipeline_run",
                           having.empty() ? "" : " HAVING " + absl::StrJoin(having, " AND "),
                           " ORDER BY first DESC, pipeline DESC, pipeline_run DESC LIMIT ",
                           want));
    int i = 0;
    for (const std::string& a : where_args) groups.bind(++i, a);
    for (const std::string& a : having_args) groups.bind(++i, a);
    while (groups.executeStep()) {
      PipelineRunSummary p;
      p.pipeline = groups.getColumn(0).getText();
      p.pipeline_run = groups.getColumn(1).getText();
      p.first_start = ledger_row::TimeOr(groups.getColumn(2).getText(), absl::UnixEpoch());
      page.runs.push_back(std::move(p));
    }
    // Each group's figures: verdicts stored as this ledger judges by their rank, the others
    // judged here.
    SQLite::Statement figures(
        *db_, absl::StrCat("SELECT count(*), sum(end_time IS NULL), max(end_time), "
                           "max(CASE WHEN verdict_judged_with = ? THEN ", kVerdictRank,
                           " END), sum(verdict_judged_with IS NOT ?) FROM runs "
                           "WHERE pipeline = ? AND pipeline_run = ?"));
    SQLite::Statement others(
        *db_, absl::StrCat("SELECT ", ledger_row::kColumns, " FROM runs WHERE pipeline = ? AND "
                           "pipeline_run = ? AND verdict_judged_with IS NOT ?"));
    for (PipelineRunSummary& p : page.runs) {
      figures.reset();
      figures.clearBindings();
      BindAll(figures, judged_with_, judged_with_, p.pipeline, p.pipeline_run);
      if (!figures.executeStep()) continue;
      p.runs = figures.getColumn(0).getInt();
      p.open_runs = figures.getColumn(1).getInt();
      if (!figures.isColumnNull(2)) {
        p.last_end = ledger_row::TimeOr(figures.getColumn(2).getText(), p.first_start);
      }
      VerdictKind worst = VerdictKind(figures.isColumnNull(3) ? 0 : figures.getColumn(3).getInt());
      if (figures.getColumn(4).getInt() > 0) {
        others.reset();
        others.clearBindings();
        BindAll(others, p.pipeline, p.pipeline_run, judged_with_);
        while (others.executeStep()) {
          worst = Worse(worst, JudgeRun(ledger_row::DecodeRow(others), judging_).kind);
        }
      }
      p.verdict = p.open_runs > 0 ? VerdictKind::kRunning : worst;
    }
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
  }
  page.more = static_cast<int>(page.runs.size()) == want;
  if (page.more) page.runs.pop_back();
  return page;
}

absl::StatusOr<std::vector<RunRecord>> Ledger::PipelineRunRuns(const std::string& pipeline,
                                                               const std::string& pipeline_run) {
  if (pipeline_run.empty()) return std::vector<RunRecord>{};
  return Query("pipeline = ? AND pipeline_run = ?", {pipeline, pipeline_run},
               "ORDER BY start_time, id");
}

absl::StatusOr<std::vector<std::string>> Ledger::PipelinesWithRun(
    const std::string& pipeline_run) {
  std::vector<std::string> out;
  try {
    // The index holds both columns: read it alone, never the rows.
    SQLite::Statement s(*db_, "SELECT DISTINCT pipeline FROM runs INDEXED BY "
                              "runs_by_pipeline_run WHERE pipeline_run != '' AND "
                              "pipeline_run = ? ORDER BY pipeline");
    BindAll(s, pipeline_run);
    while (s.executeStep()) out.push_back(s.getColumn(0).getText());
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
  }
  return out;
}

absl::StatusOr<std::vector<PressureSpan>> Ledger::PressureSpans(const std::string& id,
                                                                double share) {
  std::vector<PressureSpan> out;
  try {
    // A point's pressure is the share of the time since the point before it; the first point
    // covers no time of its own.
    SQLite::Statement s(*db_,
                        "SELECT previous, at_ms, cpu_pressure, memory_pressure FROM ("
                        "SELECT lag(at_ms) OVER (ORDER BY at_ms) AS previous, at_ms, "
                        "cpu_pressure, memory_pressure FROM run_samples WHERE run_id = ?) "
                        "WHERE previous IS NOT NULL AND (cpu_pressure > ? OR memory_pressure > ?)");
    BindAll(s, id, share, share);
    while (s.executeStep()) {
      const std::optional<double> cpu = OptReal(s.getColumn(2));
      const std::optional<double> memory = OptReal(s.getColumn(3));
      out.push_back({.from = absl::FromUnixMillis(s.getColumn(0).getInt64()),
                     .to = absl::FromUnixMillis(s.getColumn(1).getInt64()),
                     .cpu = cpu && *cpu > share,
                     .memory = memory && *memory > share});
    }
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
  }
  return out;
}

}  // namespace stagewatch
