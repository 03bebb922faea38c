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
#include "runs/ledger_sql.h"
#include "units.h"

namespace stagewatch {
namespace {

using ledger_sql::DecodeRow;
using ledger_sql::kColumns;
using ledger_sql::Statement;

// The conditions every query of a list shares, with their arguments in order.
struct Where {
  std::vector<std::string> conditions;
  std::vector<std::string> args;
};

// The runs of one query, newest first, read one at a time; those judged here that are not of
// the verdict wanted are skipped.
class RunStream {
 public:
  RunStream(sqlite3* db, const std::string& sql, const std::vector<std::string>& args,
            std::optional<VerdictKind> judge_for, const RunsConfig& judging)
      : statement_(db, sql), judge_for_(judge_for), judging_(judging) {
    for (const std::string& arg : args) statement_.Text(arg);
    Advance();
  }

  bool has_run() const { return has_run_; }
  absl::Status status() const { return statement_.status("cannot read the ledger"); }
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
  static constexpr int kStartTimeColumn = 7;  // in kColumns

  void Advance() {
    has_run_ = false;
    while (statement_.Step() == SQLITE_ROW) {
      run_ = DecodeRow(statement_);
      if (judge_for_ && JudgeRun(run_, judging_).kind != *judge_for_) continue;
      start_text_ = statement_.ColText(kStartTimeColumn);
      has_run_ = true;
      return;
    }
  }

  Statement statement_;
  const std::optional<VerdictKind> judge_for_;  // judged here when set
  const RunsConfig& judging_;
  bool has_run_ = false;
  RunRecord run_;
  std::string start_text_;
};

}  // namespace

absl::StatusOr<std::vector<RunRecord>> Ledger::List(const RunFilter& filter) {
  absl::StatusOr<RunPage> page = ListPage(filter);
  if (!page.ok()) return page.status();
  return std::move(page->runs);
}

absl::StatusOr<RunPage> Ledger::ListPage(const RunFilter& filter) {
  Where where;
  if (!filter.stage.empty()) {
    where.conditions.push_back("stage = ?");
    where.args.push_back(filter.stage);
  }
  if (filter.since) {
    where.conditions.push_back("start_time >= ?");
    where.args.push_back(FormatRfc3339(*filter.since));
  }
  if (filter.open_only) where.conditions.push_back("end_time IS NULL");
  if (!filter.before.empty()) {
    Statement cursor(db_, "SELECT start_time FROM runs WHERE id = ?");
    cursor.Text(filter.before);
    if (cursor.Step() != SQLITE_ROW) {
      if (absl::Status s = cursor.status("cannot read the ledger"); !s.ok()) return s;
      return absl::NotFoundError(absl::StrFormat(
          "no run \"%s\" in the ledger to list the runs before; start from the newest",
          filter.before));
    }
    // After (start, id) in newest-first order; the first term is a range on the indexes.
    where.conditions.push_back("start_time <= ? AND (start_time < ? OR id < ?)");
    const std::string start = cursor.ColText(0);
    where.args.insert(where.args.end(), {start, start, filter.before});
  }
  const int want = std::max(filter.limit, 0) + 1;  // one more tells whether more match
  const std::string order = "ORDER BY start_time DESC, id DESC";

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
    streams.push_back(
        std::make_unique<RunStream>(db_, sql, first_args, judge_for, judging_));
  };
  if (!filter.verdict) {
    add("", {}, {}, std::nullopt);
  } else {
    const std::string verdict(VerdictName(*filter.verdict));
    const std::string rules = absl::StrCat(kVerdictRules, ":");
    // Each judgement the ledger holds (a writer's rules and thresholds), and rows of none,
    // found by index (a loose scan of runs_by_judged_start: a step per judgement).
    std::vector<std::optional<std::string>> judgements;
    Statement unjudged(db_, "SELECT 1 FROM runs INDEXED BY runs_by_judged_start "
                            "WHERE verdict_judged_with IS NULL LIMIT 1");
    if (unjudged.Step() == SQLITE_ROW) judgements.push_back(std::nullopt);
    Statement next(db_, "SELECT min(verdict_judged_with) FROM runs INDEXED BY "
                        "runs_by_judged_start WHERE verdict_judged_with > ?");
    for (std::string after;;) {
      next.Reset().Text(after);
      if (next.Step() != SQLITE_ROW || next.Null(0)) break;
      after = next.ColText(0);
      judgements.push_back(after);
    }
    if (absl::Status s = unjudged.status("cannot read the ledger"); !s.ok()) return s;
    if (absl::Status s = next.status("cannot read the ledger"); !s.ok()) return s;
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
  }

  RunPage page;
  while (static_cast<int>(page.runs.size()) < want) {
    RunStream* newest = nullptr;
    for (const auto& s : streams) {
      if (s->has_run() && (!newest || s->NewerThan(*newest))) newest = s.get();
    }
    if (!newest) break;
    page.runs.push_back(newest->Take());
  }
  for (const auto& s : streams) {
    if (absl::Status st = s->status(); !st.ok()) {
      return absl::InternalError(absl::StrFormat("ledger \"%s\": %s", path_, st.message()));
    }
  }
  page.more = static_cast<int>(page.runs.size()) == want;
  if (page.more) page.runs.pop_back();
  return page;
}

}  // namespace stagewatch
