#include "log.h"

#include <atomic>
#include <cmath>
#include <iostream>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "json_text.h"
#include "units.h"

namespace stagewatch {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<LogFormat> g_format{LogFormat::kLogfmt};

// std::mutex rather than absl::Mutex: Debian's prebuilt abseil is not instrumented for
// ThreadSanitizer, which then reports false races on everything the lock guards.
std::mutex g_sink_mu;
std::ostream* g_sink = nullptr;  // guarded by g_sink_mu; nullptr means std::cerr

// Debian's abseil has its own absl::string_view, which StrCat will not take from a
// std::string_view; returning const char* keeps the call sites simple.
const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

// A JSON string, by nlohmann: quotes, backslashes and control characters escaped, invalid
// UTF-8 as U+FFFD (a cgroup or process name is any bytes; the line stays valid JSON). logfmt
// readers (go-logfmt) take the same escapes, so both formats quote with it.
void AppendQuoted(std::string& out, std::string_view text) {
  out += JsonText(nlohmann::json(text));
}

bool LogfmtNeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return true;
    }
  }
  return false;
}

void AppendLogfmtValue(std::string& out, std::string_view value) {
  if (LogfmtNeedsQuotes(value)) {
    AppendQuoted(out, value);
  } else {
    out += value;
  }
}

std::string FormatLogfmt(std::string_view timestamp, LogLevel level, std::string_view msg,
                         std::span<const LogField> fields) {
  std::string out = "ts=";
  out += timestamp;
  absl::StrAppend(&out, " level=", LevelName(level), " msg=");
  AppendQuoted(out, msg);  // always quoted, so a message reads the same whatever its words
  for (const LogField& field : fields) {
    absl::StrAppend(&out, " ", field.key, "=");
    AppendLogfmtValue(out, field.value);
  }
  return out;
}

std::string FormatJson(std::string_view timestamp, LogLevel level, std::string_view msg,
                       std::span<const LogField> fields) {
  std::string out = "{\"ts\":";
  AppendQuoted(out, timestamp);
  absl::StrAppend(&out, ",\"level\":\"", LevelName(level), "\",\"msg\":");
  AppendQuoted(out, msg);
  for (const LogField& field : fields) {
    out += ',';
    AppendQuoted(out, field.key);
    out += ':';
    if (field.quoted) {
      AppendQuoted(out, field.value);
    } else {
      out += field.value;
    }
  }
  out += '}';
  return out;
}

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view text) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == LevelName(level)) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown log level \"%s\"; use one of debug, info, warn, error", text));
}

absl::StatusOr<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "logfmt") return LogFormat::kLogfmt;
  if (text == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown log format \"%s\"; use one of logfmt, json", text));
}

// NaN and infinities are not JSON numbers, so those are emitted as strings.
LogField::LogField(std::string_view k, double v)
    : key(k), value(absl::StrFormat("%g", v)), quoted(!std::isfinite(v)) {}

std::string FormatLogLine(LogFormat format, std::string_view timestamp, LogLevel level,
                          std::string_view msg, std::initializer_list<LogField> fields) {
  return FormatLogLine(format, timestamp, level, msg,
                       std::span<const LogField>(fields.begin(), fields.size()));
}

std::string FormatLogLine(LogFormat format, std::string_view timestamp, LogLevel level,
                          std::string_view msg, std::span<const LogField> fields) {
  return format == LogFormat::kJson ? FormatJson(timestamp, level, msg, fields)
                                    : FormatLogfmt(timestamp, level, msg, fields);
}

void Log::Configure(LogLevel level, LogFormat format) {
  g_level.store(level, std::memory_order_relaxed);
  g_format.store(format, std::memory_order_relaxed);
}

void Log::SetSink(std::ostream* sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = sink;
}

bool Log::Enabled(LogLevel level) {
  return static_cast<int>(level) >= static_cast<int>(g_level.load(std::memory_order_relaxed));
}

void Log::Write(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  Write(level, msg, std::span<const LogField>(fields.begin(), fields.size()));
}

void Log::Write(LogLevel level, std::string_view msg, std::span<const LogField> fields) {
  if (!Enabled(level)) return;
  const std::string timestamp = FormatRfc3339(absl::Now());
  std::string line =
      FormatLogLine(g_format.load(std::memory_order_relaxed), timestamp, level, msg, fields);
  line += '\n';
  // One write per line under the lock, so concurrent lines never interleave.
  std::lock_guard<std::mutex> lock(g_sink_mu);
  std::ostream& out = g_sink != nullptr ? *g_sink : std::cerr;
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
  out.flush();
}

}  // namespace stagewatch
