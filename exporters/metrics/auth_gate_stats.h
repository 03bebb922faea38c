// What the HTTP endpoint's basic-auth gate counts, cumulative, for the agent collector: here,
// in the metrics room, so that the collector need not include the HTTP server's headers.
#pragma once

#include <cstdint>

namespace stagewatch::exporters {

struct AuthGateStats {
  uint64_t checks_accepted = 0;  // bcrypt checks run that matched
  uint64_t checks_refused = 0;   // bcrypt checks run that did not
  uint64_t throttled_failures = 0;  // answered 429: the client had no failed logins left
  uint64_t throttled_busy = 0;      // answered 429: the check queue was full
};

}  // namespace stagewatch::exporters
