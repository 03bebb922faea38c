#include "units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// A non-negative decimal number ("12", "0.25", "1.5"), nothing else; false otherwise.
bool ParseDecimal(std::string_view text, double& out) {
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string_view::npos ||
      text.find('.') != text.rfind('.') || text == ".") {
    return false;
  }
  out = std::strtod(std::string(text).c_str(), nullptr);
  return std::isfinite(out);
}

}  // namespace

absl::StatusOr<uint64_t> ParseSize(std::string_view text, std::string_view flag) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s \"%s\" is not a size; write bytes or a number with K, M, G or T (powers of 1024), "
        "e.g. 400M or 2G", ToAbsl(flag), ToAbsl(text)));
  };
  if (text.empty()) return invalid();
  double multiplier = 1;
  std::string_view number = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K': multiplier = 1024.0; break;
    case 'M': multiplier = 1024.0 * 1024; break;
    case 'G': multiplier = 1024.0 * 1024 * 1024; break;
    case 'T': multiplier = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (multiplier != 1) number.remove_suffix(1);
  uint64_t bytes = 0;
  if (multiplier == 1) {
    if (!ParseDigits(number, bytes)) return invalid();
  } else {
    double value = 0;
    if (!ParseDecimal(number, value)) return invalid();
    const double total = std::floor(value * multiplier);
    if (total >= 9.2e18) return invalid();
    bytes = static_cast<uint64_t>(total);
  }
  if (bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be above 0 (got \"%s\")", ToAbsl(flag), ToAbsl(text)));
  }
  return bytes;
}

absl::StatusOr<double> ParseCores(std::string_view text, std::string_view flag) {
  double cores = 0;
  if (!ParseDecimal(text, cores) || cores <= 0 || cores > 1e6) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s \"%s\" is not a number of CPUs above 0; write e.g. 0.5 or 2", ToAbsl(flag),
        ToAbsl(text)));
  }
  return cores;
}

absl::StatusOr<absl::Duration> ParseDuration(std::string_view text, std::string_view name) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s \"%s\" is not a duration; write e.g. 200ms, 1m30s, 24h or 7d", ToAbsl(name),
        ToAbsl(text)));
  };
  if (!text.empty() && text[0] == '-') {
    return absl::InvalidArgumentError(absl::StrFormat("%s must not be negative (got \"%s\")",
                                                      ToAbsl(name), ToAbsl(text)));
  }
  // absl has no day unit (and no unit of its has a 'd'): days come first, the rest is absl's.
  absl::Duration days;
  std::string_view rest = text;
  if (const size_t d = text.find('d'); d != std::string_view::npos) {
    double count = 0;
    if (!ParseDecimal(text.substr(0, d), count)) return invalid();
    days = absl::Hours(24 * count);
    rest = text.substr(d + 1);
  }
  absl::Duration more;
  if (!rest.empty() && (!absl::ParseDuration(ToAbsl(rest), &more) || rest[0] == '-' ||
                        rest[0] == '+' || more == absl::InfiniteDuration())) {
    return invalid();
  }
  if (text.empty() || days + more == absl::InfiniteDuration()) return invalid();
  return days + more;
}

absl::StatusOr<absl::Duration> ParseTimeOfDay(std::string_view text, std::string_view name) {
  const size_t colon = text.find(':');
  uint64_t hours = 0, minutes = 0;
  if (colon == std::string_view::npos || colon > 2 || text.size() - colon != 3 ||
      !ParseDigits(text.substr(0, colon), hours) || !ParseDigits(text.substr(colon + 1), minutes) ||
      hours > 23 || minutes > 59) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s \"%s\" is not a time of day; write HH:MM on a 24-hour clock, e.g. 12:00 or 06:30",
        ToAbsl(name), ToAbsl(text)));
  }
  return absl::Hours(hours) + absl::Minutes(minutes);
}

std::string FormatTimeOfDay(absl::Duration since_midnight) {
  const int64_t minutes = absl::ToInt64Minutes(since_midnight);
  return absl::StrFormat("%02d:%02d", minutes / 60, minutes % 60);
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const char* sign = bytes < 0 ? "-" : "";
  double value = std::fabs(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  // Literal formats: absl checks them at compile time.
  if (unit == 0) return absl::StrFormat("%s%.0f B", sign, value);
  if (value < 10) return absl::StrFormat("%s%.2f %s", sign, value, kUnits[unit]);
  return absl::StrFormat("%s%.1f %s", sign, value, kUnits[unit]);
}

std::string FormatExact(double value) {
  // A whole number reads as one ("4000000", not to_chars' shorter "4e+06").
  if (value == std::trunc(value) && std::abs(value) < 1e15) return absl::StrFormat("%.0f", value);
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

std::string FormatSeconds(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1f s", seconds);
  const int64_t whole = static_cast<int64_t>(seconds);
  if (whole < 3600) return absl::StrFormat("%dm%02ds", whole / 60, whole % 60);
  return absl::StrFormat("%dh%02dm", whole / 3600, (whole % 3600) / 60);
}

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

absl::StatusOr<absl::Time> ParseRfc3339(std::string_view text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, ToAbsl(text), &t, &error)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("\"%s\" is not an RFC 3339 time: %s", ToAbsl(text), error));
  }
  return t;
}

}  // namespace stagewatch
