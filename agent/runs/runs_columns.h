// The columns `runs list` can show, by name, as sacct's --format picks them (-o/--fields).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runs/run_record.h"
#include "runs/verdict.h"

namespace stagewatch {

struct RunColumn {
  std::string name;    // as -o takes it: "peak_limit"
  std::string header;  // as the table shows it: "PEAK / LIMIT"
  std::function<std::string(const RunRecord&, const Verdict&)> cell;
};

const std::vector<RunColumn>& AllRunColumns();
// id, stage, start, wall, ended, peak_limit, verdict, why: the table without -o.
std::vector<const RunColumn*> DefaultRunColumns();
// A comma-separated list of names; an unknown one is an error listing every name.
absl::StatusOr<std::vector<const RunColumn*>> ParseRunColumns(std::string_view list);

// "87.3 MiB / 200.0 MiB", the peak alone without a limit, "-" when not observed.
std::string PeakOverLimit(const RunRecord& run);

}  // namespace stagewatch
