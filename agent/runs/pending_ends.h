// Run ends kept beside the ledger when the ledger cannot take them (a full disk), to be recorded
// later with the figures they had: `<ledger>.pending/<run-id>.end`, JSON. The launcher reserves
// room for its run's end when the run starts (`<run-id>.reserved`, allocated on disk), so the
// end can be written there even once the disk has filled. The agent (each tick), the next
// `stagewatch run` and `stagewatch runs list` record kept ends and delete their files.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runs/ledger.h"
#include "runs/run_record.h"

namespace stagewatch {

std::string PendingEndsDir(const std::string& ledger_path);

// Reserves room on disk for the end of run `id` (making the directory when missing).
absl::Status ReservePendingEnd(const std::string& ledger_path, const std::string& id);

// Writes `end` into the run's reserved room, or a new file when it has none, and returns the
// file that holds it.
absl::StatusOr<std::string> KeepPendingEnd(const std::string& ledger_path, const std::string& id,
                                           const RunEnd& end);

// Drops the run's reservation (its end is in the ledger).
void DropPendingEnd(const std::string& ledger_path, const std::string& id);

// Whether an end is kept there (a quick look, without the ledger).
bool HasKeptEnds(const std::string& ledger_path);

struct PendingImport {
  std::vector<std::string> recorded;  // run ids whose kept end is now in the ledger
  std::vector<std::string> problems;  // ends that stay kept, and why
};

// Records every kept end in `ledger` and deletes its file (also when the run is unknown or has
// ended already). `reservations_too` also reads the reservations (an end whose file could not be
// renamed, reservations left by runs that have ended): the agent's ticks look at `.end` files
// only, which costs one directory read.
PendingImport ImportPendingEnds(Ledger& ledger, bool reservations_too);

}  // namespace stagewatch
