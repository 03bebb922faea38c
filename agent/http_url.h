// An http:// or https:// base URL (the Alertmanager's), parsed once and shared by
// `check-config` and the agent's start, so both accept exactly the same URLs.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

// scheme://host[:port][/prefix], nothing else: no credentials, query or fragment.
struct HttpUrl {
  std::string scheme;   // "http" or "https"
  std::string host;     // IPv6 literals without brackets
  int port = 0;
  std::string prefix;   // "" or "/path" without a trailing slash
  std::string display;  // scheme://host:port/prefix
};

// `what` names the URL in messages ("alertmanager URL"). Messages never repeat credentials
// written into the URL: user:password@ shows as ***@.
absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view raw, std::string_view what);

// The URL as it may appear in a message or log: any user:password@ replaced by ***@.
std::string RedactUrl(std::string_view raw);

}  // namespace stagewatch
