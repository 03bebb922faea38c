// Ledger::ListPage: the filters in SQL over every run, a page at a time. A verdict filter
// reads the verdict each row stores, by index, where it was judged as this ledger would judge it
// (the same rules and thresholds, or a verdict no threshold changes); the other rows, judged by
// a writer with other thresholds or not at all, are judged here as they are read. Each kind of
// row comes from a query of its own, newest first, and the page is their merge.
#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_sqlite.h"
#include "units.h"

namespace stagewatch {
namespace {

using ledger_row::DecodeRow;
using ledger_row::kColumns;
using ledger_sqlite::BindAll;

// The conditions every query of a list shares, with their arguments in order.
struct Where {
  std::vector<std::string> conditions;
  std::vector<std::string> args;
};

// The runs of one query, newest first, read one at a time; those judged here that are not of
// the verdict wanted are skipped. Throws SQLite::Exception as the statement does.
class RunStream {
 public:
  RunStream(SQLite::Database& db, const std::string& sql, const std::vector<std::string>& args,
            std::optional<VerdictKind> judge_for, const RunsConfig& judging)
      : statement_(db, sql), judge_for_(judge_for), judging_(judging) {
    for (size_t i = 0; i < args.size(); ++i) statement_.bind(static_cast<int>(i) + 1, args[i]);
    Advance();
  }

  bool has_run() const { return has_run_; }
  // Ordered as the queries are: start_time, then id, both as SQLite compares text.
  bool NewerThan(const RunStream& other) const {
    return std::tie(start_text_, run_.start.id) > std::tie(other.start_text_, other.run_.start.id);
  }
  RunRecord Take() {
    RunRecord r = std::move(run_);
    Advance();
    return r;
  }

 private:
  void Advance() {
    has_run_ = false;
    while (statement_.executeStep()) {
      run_ = DecodeRow(statement_);
      if (judge_for_ && JudgeRun(run_, judging_).kind != *judge_for_) continue;
      start_text_ = statement_.getColumn(ledger_row::kStartTimeColumn).getText();
      has_run_ = true;
      return;
    }
  }

  SQLite::Statement statement_;
  const std::optional<VerdictKind> judge_for_;  // judged here when set
  const RunsConfig& judging_;
  bool has_run_ = false;
  RunRecord run_;
  std::string start_text_;
};

// The judgements the ledger holds (a writer's rules and thresholds, VerdictJudgedWith), and
// nullopt for rows of none, found by index (a loose scan of runs_by_judged_start: a step per
// judgement).
std::vector<std::optional<std::string>> Judgements(SQLite::Database& db) {
  std::vector<std::optional<std::string>> judgements;
  SQLite::Statement unjudged(db, "SELECT 1 FROM runs INDEXED BY runs_by_judged_start "
                                 "WHERE verdict_judged_with IS NULL LIMIT 1");
  if (unjudged.executeStep()) judgements.push_back(std::nullopt);
  SQLite::Statement next(db, "SELECT min(verdict_judged_with) FROM runs INDEXED BY "
                             "runs_by_judged_start WHERE verdict_judged_with > ?");
  for (std::string after;;) {
    next.reset();
    next.clearBindings();
    BindAll(next, after);
    if (!next.executeStep() || next.isColumnNull(0)) break;
    after = next.getColumn(0).getText();
    judgements.push_back(after);
  }
  return judgements;
}

}  // namespace

absl::StatusOr<std::vector<RunRecord>> Ledger::List(const RunFilter& filter) {
  absl::StatusOr<RunPage> page = ListPage(filter);
  if (!page.ok()) return page.status();
  return std::move(page->runs);
}

absl::StatusOr<RunPage> Ledger::ListPage(const RunFilter& filter) {
  Where where;
  if (!filter.pipeline.empty()) {
    where.conditions.push_back("pipeline = ?");
    where.args.push_back(filter.pipeline);
  }
  if (!filter.stage.empty()) {
    where.conditions.push_back("stage = ?");
    where.args.push_back(filter.stage);
  }
  if (filter.since) {
    where.conditions.push_back("start_time >= ?");
    where.args.push_back(FormatRfc3339(*filter.since));
  }
  if (filter.until) {
    where.conditions.push_back("start_time < ?");
    where.args.push_back(FormatRfc3339(*filter.until));
  }
  if (filter.open_only) where.conditions.push_back("end_time IS NULL");
  std::vector<std::optional<std::string>> judgements;
  try {
    if (!filter.before.empty()) {
      SQLite::Statement cursor(*db_, "SELECT start_time FROM runs WHERE id = ?");
      BindAll(cursor, filter.before);
      if (!cursor.executeStep()) {
        return absl::NotFoundError(absl::StrFormat(
            "no run \"%s\" in the ledger to list the runs before; start from the newest",
            filter.before));
      }
      // After (start, id) in newest-first order; the first term is a range on the indexes.
      where.conditions.push_back("start_time <= ? AND (start_time < ? OR id < ?)");
      const std::string start = cursor.getColumn(0).getText();
      where.args.insert(where.args.end(), {start, start, filter.before});
    }
    if (filter.verdict) judgements = Judgements(*db_);
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError("cannot read the ledger", e);
  }
  const int want = std::max(filter.limit, 0) + 1;  // one more tells whether more match
  const std::string order = "ORDER BY start_time DESC, id DESC";

  RunPage page;
  try {
    std::vector<std::unique_ptr<RunStream>> streams;
    // One query of `index`'s rows with `first` conditions (their arguments `first_args`), and
    // the filter's; judged here for `judge_for` when set.
    auto add = [&](const std::string& index, std::vector<std::string> first,
                   std::vector<std::string> first_args, std::optional<VerdictKind> judge_for) {
      first.insert(first.end(), where.conditions.begin(), where.conditions.end());
      first_args.insert(first_args.end(), where.args.begin(), where.args.end());
      const std::string sql = absl::StrCat(
          "SELECT ", kColumns, " FROM runs", index.empty() ? "" : " INDEXED BY " + index,
          first.empty() ? "" : " WHERE " + absl::StrJoin(first, " AND "), " ", order,
          judge_for ? "" : absl::StrCat(" LIMIT ", want));
      streams.push_back(std::make_unique<RunStream>(*db_, sql, first_args, judge_for, judging_));
    };
    if (!filter.verdict) add("", {}, {}, std::nullopt);
    const std::string verdict(filter.verdict ? VerdictName(*filter.verdict) : "");
    const std::string rules = absl::StrCat(kVerdictRules, ":");
    for (const std::optional<std::string>& with : judgements) {
      const bool same_rules = with && with->starts_with(rules);
      if (with && (*with == judged_with_ ||
                   (same_rules && !VerdictDependsOnThresholds(*filter.verdict)))) {
        add("runs_by_verdict", {"verdict_judged_with = ?", "verdict = ?"}, {*with, verdict},
            std::nullopt);
      } else if (same_rules) {
        // Other thresholds move runs only among clean, unobserved and degraded.
        add("runs_by_judged_start",
            {"verdict_judged_with = ?", "verdict IN ('clean', 'unobserved', 'degraded')"},
            {*with}, filter.verdict);
      } else if (with) {
        add("runs_by_judged_start", {"verdict_judged_with = ?"}, {*with}, filter.verdict);
      } else {
        add("runs_by_judged_start", {"verdict_judged_with IS NULL"}, {}, filter.verdict);
      }
    }
    while (static_cast<int>(page.runs.size()) < want) {
      RunStream* newest = nullptr;
      for (const auto& s : streams) {
        if (s->has_run() && (!newest || s->NewerThan(*newest))) newest = s.get();
      }
      if (!newest) break;
      page.runs.push_back(newest->Take());
    }
  } catch (const SQLite::Exception& e) {
    return absl::InternalError(
        absl::StrFormat("ledger \"%s\": cannot read the ledger: %s", path_, e.what()));
  }
  page.more = static_cast<int>(page.runs.size()) == want;
  if (page.more) page.runs.pop_back();
  return page;
}

}  // namespace stagewatch
