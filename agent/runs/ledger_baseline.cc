// A run's baseline candidates: its stage's clean runs with the same limits, by index.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_sqlite.h"
#include "units.h"

namespace stagewatch {

absl::StatusOr<std::vector<RunRecord>> Ledger::CleanRunsBefore(const RunStart& run, int n) {
  using ledger_sqlite::BindAll;
  std::vector<RunRecord> out;
  // Rows judged with the ledger's thresholds by their stored verdict (runs_by_stage_verdict);
  // the others judged here, newest first, at most kBaselineScan of them.
  const std::string same = absl::StrCat(
      "SELECT ", ledger_row::kColumns, " FROM runs WHERE stage = ? AND start_time < ? AND "
      "end_time IS NOT NULL AND limit_memory_max_bytes IS ? AND limit_memory_high_bytes IS ? AND "
      "limit_cpu_max_cores IS ? AND limit_cpu_weight IS ? AND limit_cpuset_cpus IS ? AND "
      "limit_cpuset_mems IS ? AND ");
  const RunLimits& l = run.limits;
  const std::string before = FormatRfc3339(run.start);
  try {
    SQLite::Statement judged(*db_, absl::StrCat(same, "verdict_judged_with = ? AND verdict = "
                                                "'clean' ORDER BY start_time DESC LIMIT ?"));
    BindAll(judged, run.stage, before, l.memory_max_bytes, l.memory_high_bytes, l.cpu_max_cores,
            l.cpu_weight, l.cpuset_cpus, l.cpuset_mems, judged_with_, n);
    while (judged.executeStep()) out.push_back(ledger_row::DecodeRow(judged));
    SQLite::Statement other(*db_, absl::StrCat(same, "verdict_judged_with IS NOT ? "
                                               "ORDER BY start_time DESC LIMIT ?"));
    BindAll(other, run.stage, before, l.memory_max_bytes, l.memory_high_bytes, l.cpu_max_cores,
            l.cpu_weight, l.cpuset_cpus, l.cpuset_mems, judged_with_, kBaselineScan);
    while (other.executeStep()) {
      RunRecord r = ledger_row::DecodeRow(other);
      if (JudgeRun(r, judging_).kind == VerdictKind::kClean) out.push_back(std::move(r));
    }
  } catch (const SQLite::Exception& e) {
    return ledger_sqlite::SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
  }
  std::stable_sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.start.start > b.start.start;
  });
  if (static_cast<int>(out.size()) > n) out.resize(n);
  return out;
}

}  // namespace stagewatch
