// Which paths the ledger is opened at. Root writes the ledger, so a path that another user could
// point elsewhere (a symbolic link, or any file in a directory every user may write) would let
// that user have root create or overwrite a file of their choosing.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace stagewatch {

// The file SQLite is to open for the ledger at `path`: its directory resolved (symbolic links
// among the directories are followed here, once), its own name kept. Refuses, saying what to do:
// an empty path, a directory, a symbolic link as the ledger or as its -wal or -shm file
// (SQLite opens them without following a link, so one made later is refused too), a special
// file, and a directory that every user may write (o+w; group-writable is fine: launchers and
// the agent share a ledger through a group). A writer creates a missing directory.
absl::StatusOr<std::string> LedgerFileToOpen(const std::string& path, bool read_only);

}  // namespace stagewatch
