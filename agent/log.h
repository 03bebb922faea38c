// Structured logging: one line per event, logfmt or JSON, to stderr.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stagewatch {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kLogfmt, kJson };

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view text);
absl::StatusOr<LogFormat> ParseLogFormat(std::string_view text);

// One key=value pair. Numbers are rendered bare in JSON, strings quoted.
struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  LogField(std::string_view k, const char* v) : key(k), value(v), quoted(true) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  // Debian's abseil has its own string_view (Status::message() returns one).
  LogField(std::string_view k, absl::string_view v) : key(k), value(v), quoted(true) {}
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  LogField(std::string_view k, T v) : key(k), value(std::to_string(v)), quoted(false) {}
  LogField(std::string_view k, double v);
  LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}

  std::string key;
  std::string value;
  bool quoted;
};

// Process-wide logger. Thread-safe; each call writes one whole line.
class Log {
 public:
  static void Configure(LogLevel level, LogFormat format);
  // Redirects output (tests). The stream must outlive its use; nullptr restores stderr.
  static void SetSink(std::ostream* sink);
  static bool Enabled(LogLevel level);

  static void Write(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields);
  // For lines whose fields vary (figures that may not be known).
  static void Write(LogLevel level, std::string_view msg, std::span<const LogField> fields);

  static void Debug(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Write(LogLevel::kDebug, msg, fields);
  }
  static void Info(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Write(LogLevel::kInfo, msg, fields);
  }
  static void Warn(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Write(LogLevel::kWarn, msg, fields);
  }
  static void Error(std::string_view msg, std::initializer_list<LogField> fields = {}) {
    Write(LogLevel::kError, msg, fields);
  }
};

// Formats one line without the trailing newline (exposed for tests).
std::string FormatLogLine(LogFormat format, std::string_view timestamp, LogLevel level,
                          std::string_view msg, std::initializer_list<LogField> fields);
std::string FormatLogLine(LogFormat format, std::string_view timestamp, LogLevel level,
                          std::string_view msg, std::span<const LogField> fields);

}  // namespace stagewatch
