// Sizes, CPU amounts and times as users write them, and back as people read them: one format
// for each, wherever the agent prints one (runs, verdicts, advice, detector summaries, pages,
// logs, alerts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace stagewatch {

// "400M", "2G", "1.5G", "512k" or plain bytes; K, M, G and T are powers of 1024. `flag` names
// the option in error messages.
absl::StatusOr<uint64_t> ParseSize(std::string_view text, std::string_view flag);

// A number of CPUs above 0, such as "0.2" or "2".
absl::StatusOr<double> ParseCores(std::string_view text, std::string_view flag);

// The one duration syntax of flags and configuration: "200ms", "1m30s", "24h", "7d", "1d12h"
// (absl's units, ns to h, plus d for 24 h, which may lead), not negative. `name` names the
// flag or key in error messages.
absl::StatusOr<absl::Duration> ParseDuration(std::string_view text, std::string_view name);

// A local time of day as "HH:MM" on a 24-hour clock ("12:00", "06:30", "0:15"): its offset from
// midnight. `name` names the key in error messages.
absl::StatusOr<absl::Duration> ParseTimeOfDay(std::string_view text, std::string_view name);
std::string FormatTimeOfDay(absl::Duration since_midnight);  // "06:30"

// "512 B", "200.0 MiB", "1.50 GiB", "-3.00 MiB": binary units, as memory limits are set, with
// at least three significant digits (a peak beside its limit, an advised limit, must not round
// to the same figure).
std::string FormatBytes(double bytes);

// "12.3 s", "2m05s", "1h02m".
std::string FormatSeconds(double seconds);

// Text that reads back as the same double, as short as it can be: whole numbers below 1e15 in
// full ("4000000"), others the shortest way ("0.9547", "1e+21"). A result a command computed is
// shown as it wrote it.
std::string FormatExact(double value);

// RFC 3339 in UTC with milliseconds ("2026-12-01T07:45:12.345Z"): fixed width, so the text
// sorts in time order (the ledger compares these strings).
std::string FormatRfc3339(absl::Time t);
absl::StatusOr<absl::Time> ParseRfc3339(std::string_view text);

}  // namespace stagewatch
