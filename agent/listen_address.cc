#include "listen_address.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "string_util.h"

namespace stagewatch {

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view address) {
  const std::string form = absl::StrFormat(
      "listen address \"%s\" must be host:port, :port or [ipv6]:port", address);
  std::string_view host, port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find("]:");
    if (close == std::string_view::npos || close == 1) return absl::InvalidArgumentError(form);
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return absl::InvalidArgumentError(form);
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return absl::InvalidArgumentError(
          form + "; put an IPv6 address in brackets, e.g. \"[::1]:9617\"");
    }
  }
  if (std::any_of(host.begin(), host.end(), absl::ascii_isspace)) {
    return absl::InvalidArgumentError(form);
  }
  uint32_t number = 0;
  const bool valid = !port.empty() && port.size() <= 5 &&
                     std::all_of(port.begin(), port.end(), absl::ascii_isdigit) &&
                     absl::SimpleAtoi(ToAbsl(port), &number) && number <= 65535;
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "port \"%s\" in listen address \"%s\" must be a number from 0 to 65535", port, address));
  }
  return ListenAddress{.host = host.empty() ? "0.0.0.0" : std::string(host),
                       .port = static_cast<int>(number)};
}

}  // namespace stagewatch
