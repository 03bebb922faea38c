// What a run's command computed (an accuracy, a loss, a row count), as it writes it to the file
// `STAGEWATCH_RESULTS` names, or as `stagewatch results RUN_ID name=value...` gives it: a JSON
// object of name → number, or one `name value` per line.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

inline constexpr size_t kMaxResultsFileBytes = 64 << 10;  // a results file, not a data file
inline constexpr size_t kMaxResults = 200;                // names per run
inline constexpr size_t kMaxResultNameBytes = 100;

struct ParsedResults {
  std::map<std::string, double> values;
  std::vector<std::string> problems;  // what was skipped and why, one line each
};

// Letters, digits, "_", ".", "-", ":" and "/", starting with a letter or "_", at most
// kMaxResultNameBytes: a name that reads the same in a table, a URL and a Prometheus label.
absl::Status CheckResultName(std::string_view name);

// A JSON object of name → finite number, or `name value` lines (blank lines and lines starting
// with "#" are skipped). What cannot be read is named in `problems` and skipped; the rest kept.
ParsedResults ParseResults(std::string_view text);

// `name=value` words, as `stagewatch results` takes them.
ParsedResults ParseResultWords(const std::vector<std::string>& words);

// The file at `path`, as ParseResults reads it: NotFound when the command wrote none; a problem
// (and nothing read) when it is not a regular file or is over kMaxResultsFileBytes.
absl::StatusOr<ParsedResults> ReadResultsFile(const std::string& path);

}  // namespace stagewatch
