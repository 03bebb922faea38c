// What the ledger-reading subcommands share: opening an existing ledger, and failing with the
// command's name.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/runs_config.h"
#include "runs/ledger.h"

namespace stagewatch {

// Opens an existing ledger for reading commands; a missing one is not created. (A link is
// not missing: opening it says why it is refused.)
absl::StatusOr<std::unique_ptr<Ledger>> OpenExistingLedger(const std::string& path,
                                                           const RunsConfig& judging);

// Prints "stagewatch <command>: <message>" to stderr and returns 1.
int FailCommand(const char* command, const absl::Status& status);

// The run `id`, or NotFound naming it and where to look.
absl::StatusOr<RunRecord> GetRunOrExplain(Ledger& ledger, const std::string& id);

}  // namespace stagewatch
