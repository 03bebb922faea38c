#include "runs/results_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stagewatch {

absl::StatusOr<ResultsDirectory> ResultsDirectory::Make(const std::string& run_id) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
  std::string pattern = absl::StrCat(base, "/stagewatch-", run_id, "-XXXXXX");
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot make a directory for the run's results under %s: %s; set TMPDIR to a writable "
        "directory", base, std::strerror(errno)));
  }
  return ResultsDirectory(std::string(buf.data()));
}

ResultsDirectory::ResultsDirectory(std::string directory)
    : directory_(std::move(directory)), file_(directory_ + "/results") {}

ResultsDirectory::ResultsDirectory(ResultsDirectory&& other) noexcept
    : directory_(std::exchange(other.directory_, "")), file_(std::move(other.file_)) {}

ResultsDirectory::~ResultsDirectory() {
  if (directory_.empty()) return;
  std::error_code ignored;  // what cannot be removed stays in a temporary directory
  std::filesystem::remove_all(directory_, ignored);
}

}  // namespace stagewatch
