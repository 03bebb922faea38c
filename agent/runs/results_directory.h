// A private directory for one run's results file (STAGEWATCH_RESULTS), removed with what is in
// it when the launcher is done with it.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace stagewatch {

class ResultsDirectory {
 public:
  // Makes $TMPDIR/stagewatch-<run id>-XXXXXX (or under /tmp), mode 0700.
  static absl::StatusOr<ResultsDirectory> Make(const std::string& run_id);
  ResultsDirectory(ResultsDirectory&& other) noexcept;
  ResultsDirectory& operator=(ResultsDirectory&&) = delete;
  ResultsDirectory(const ResultsDirectory&) = delete;
  ~ResultsDirectory();

  const std::string& file() const { return file_; }  // "<directory>/results"

 private:
  explicit ResultsDirectory(std::string directory);
  std::string directory_;  // "" once moved from
  std::string file_;
};

}  // namespace stagewatch
