// The Alertmanager's base URL (http:// or https://), parsed by libcurl's URL API, the parser of
// the client that sends to it. One function for `check-config` and the agent's start, so both
// accept exactly the same URLs.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

// scheme://host[:port][/prefix], nothing else: no credentials, query or fragment.
struct AlertmanagerUrl {
  std::string scheme;    // "http" or "https"
  std::string host;      // IPv6 literals without brackets
  int port = 0;
  std::string prefix;    // "" or "/path" without a trailing slash
  std::string display;   // scheme://host:port/prefix, the `alertmanager` label value
  std::string endpoint;  // the URL alerts are posted to: display + /api/v2/alerts
};

// Messages say what to write instead, and never repeat credentials written into the URL:
// user:password@ shows as ***@.
absl::StatusOr<AlertmanagerUrl> ParseAlertmanagerUrl(std::string_view raw);

// The URL as it may appear in a message or log: any user:password@ replaced by ***@.
std::string RedactUrl(std::string_view raw);

}  // namespace stagewatch
