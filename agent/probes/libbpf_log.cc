#include "probes/libbpf_log.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "absl/strings/strip.h"
#include "log.h"

namespace stagewatch {
namespace {

int PrintToLog(enum libbpf_print_level level, const char* format, va_list args) {
  const LogLevel ours = level == LIBBPF_WARN ? LogLevel::kWarn : LogLevel::kDebug;
  if (!Log::Enabled(ours)) return 0;
  char buffer[1024];
  int n = vsnprintf(buffer, sizeof(buffer), format, args);
  if (n <= 0) return n;
  Log::Write(ours, "libbpf", {{"detail", std::string(absl::StripTrailingAsciiWhitespace(buffer))}});
  return n;
}

}  // namespace

void RouteLibbpfLogs() { libbpf_set_print(PrintToLog); }

}  // namespace stagewatch
