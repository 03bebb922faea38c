// How runs and advice read: a table, a one-line-first summary, and JSON with the same facts
// (for `stagewatch runs` and `advise`, and for the agent's /api/v1/runs later).
#pragma once

#include <string>
#include <vector>

#include "config/runs_config.h"
#include "nlohmann/json.hpp"
#include "runs/advisor.h"
#include "runs/run_record.h"
#include "runs/runs_columns.h"

namespace stagewatch {

// Text for a terminal (RunsTable, RunDetails, AdviceText) shows control characters from the
// ledger escaped (TerminalText); JSON carries them as JSON escapes.
nlohmann::json RunToJson(const RunRecord& run, const RunsConfig& config);
std::string RunsTable(const std::vector<RunRecord>& runs, const RunsConfig& config);
// RunsTable a page at a time (`runs list --all`): the header with the first page, and each
// column as wide as its widest cell so far, so the pages line up unless a later cell is wider.
class RunsTableWriter {
 public:
  // `columns`: from ParseRunColumns (runs list -o), or the default table's.
  explicit RunsTableWriter(const RunsConfig& config,
                           std::vector<const RunColumn*> columns = DefaultRunColumns())
      : config_(config), columns_(std::move(columns)) {}
  std::string Page(const std::vector<RunRecord>& runs);

 private:
  const RunsConfig config_;
  const std::vector<const RunColumn*> columns_;
  bool header_written_ = false;
  std::vector<size_t> width_;
};
// First line: the run, its stage and its verdict with the reasons; then one line per fact.
std::string RunDetails(const RunRecord& run, const RunsConfig& config);

nlohmann::json AdviceToJson(const Advice& advice);
std::string AdviceText(const Advice& advice);

std::string LimitsText(const RunLimits& limits);  // "memory-max 200.0 MiB, cpu-max 0.2"; "none"
nlohmann::json LimitsJson(const RunLimits& limits);  // every limit, null when none

// Rows of cells in columns as wide as their widest cell, each cell shown with TerminalText.
std::string TextTable(const std::vector<std::vector<std::string>>& cells);

}  // namespace stagewatch
