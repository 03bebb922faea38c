#include "app/cli_ledger.h"

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace stagewatch {

absl::StatusOr<std::unique_ptr<Ledger>> OpenExistingLedger(const std::string& path,
                                                           const RunsConfig& judging) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    return absl::NotFoundError(absl::StrCat(
        "no ledger at \"", path, "\" yet: no run has been recorded there; record one with "
        "`stagewatch run`, or pass --ledger.path"));
  }
  return Ledger::OpenForReading(path, judging);
}

int FailCommand(const char* command, const absl::Status& status) {
  std::cerr << "stagewatch " << command << ": " << status.message() << "\n";
  return 1;
}

absl::StatusOr<RunRecord> GetRunOrExplain(Ledger& ledger, const std::string& id) {
  absl::StatusOr<std::optional<RunRecord>> run = ledger.Get(id);
  if (!run.ok()) return run.status();
  if (!*run) {
    return absl::NotFoundError(absl::StrCat("no run \"", id, "\" in the ledger \"", ledger.path(),
                                            "\"; see `stagewatch runs list`"));
  }
  return **std::move(run);
}

}  // namespace stagewatch
