// `runs list`'s filter flags into the ledger's RunFilter, each checked with a message that
// says what to write. One field and one block per flag: a new filter is one more of each.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runs/ledger.h"

namespace stagewatch {

struct ListFlags {
  std::string stage;    // --stage
  std::string pipeline;  // --pipeline
  std::string verdict;  // --verdict
  std::string since;    // --since: runs started at or after; 7d (ago) or an RFC 3339 time
  std::string until;    // --until: runs started before; the same forms
};

absl::StatusOr<RunFilter> RunFilterFromFlags(const ListFlags& flags, absl::Time now);

}  // namespace stagewatch
