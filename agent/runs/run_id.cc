#include "runs/run_id.h"

#include <sys/random.h>

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "string_util.h"

namespace stagewatch {

std::string NewRunId(absl::Time now) {
  uint16_t suffix = 0;
  if (getrandom(&suffix, sizeof suffix, 0) != sizeof suffix) {
    suffix = static_cast<uint16_t>(absl::ToUnixNanos(now));
  }
  return absl::StrFormat("%s-%04x", absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone()),
                         suffix);
}

absl::Status CheckRunId(std::string_view id) {
  const bool valid = !id.empty() && id.size() <= 128 && absl::ascii_isalnum(id[0]) &&
                     std::all_of(id.begin(), id.end(), [](char c) {
                       return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
                     });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "run id \"%s\" is not valid; use up to 128 letters, digits, \"_\", \".\" and \"-\", "
      "starting with a letter or digit", ToAbsl(id)));
}

}  // namespace stagewatch
