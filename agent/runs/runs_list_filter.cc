#include "runs/runs_list_filter.h"

#include "absl/strings/str_cat.h"
#include "runs/verdict.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch {
namespace {

// "7d", "24h" (that long before `now`) or "2026-12-01T08:00:00Z".
absl::StatusOr<absl::Time> ParseWhen(const std::string& text, const char* flag, absl::Time now) {
  if (absl::StatusOr<absl::Duration> ago = ParseDuration(text, flag); ago.ok()) return now - *ago;
  if (absl::StatusOr<absl::Time> at = ParseRfc3339(text); at.ok()) return *at;
  return absl::InvalidArgumentError(absl::StrCat(
      flag, " \"", text, "\" is neither a duration (30m, 24h, 7d: that long ago) nor a time "
      "(2026-12-01T08:00:00Z)"));
}

}  // namespace

absl::StatusOr<RunFilter> RunFilterFromFlags(const ListFlags& flags, absl::Time now) {
  RunFilter filter;
  filter.stage = flags.stage;
  filter.pipeline = flags.pipeline;
  if (!flags.verdict.empty()) {
    filter.verdict = ParseVerdictName(flags.verdict);
    if (!filter.verdict) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--verdict \"", flags.verdict, "\": use running, clean, unobserved, degraded or "
          "interrupted"));
    }
  }
  if (!flags.since.empty()) {
    absl::StatusOr<absl::Time> since = ParseWhen(flags.since, "--since", now);
    if (!since.ok()) return since.status();
    filter.since = *since;
  }
  if (!flags.until.empty()) {
    absl::StatusOr<absl::Time> until = ParseWhen(flags.until, "--until", now);
    if (!until.ok()) return until.status();
    filter.until = *until;
  }
  if (filter.since && filter.until && *filter.until <= *filter.since) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--until (", FormatRfc3339(*filter.until), ") must come after --since (",
        FormatRfc3339(*filter.since), ")"));
  }
  return filter;
}

}  // namespace stagewatch
