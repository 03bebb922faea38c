// The listen address syntax shared by the configuration and the HTTP endpoint.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

struct ListenAddress {
  std::string host;  // "0.0.0.0" for ":port"
  int port = 0;      // 0: any free port
};

// "host:port", ":port" (all IPv4 interfaces) or "[ipv6]:port"; the error says which form to use.
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view address);

}  // namespace stagewatch
