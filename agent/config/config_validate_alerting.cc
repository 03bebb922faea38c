// Checks for the values that shape the agent's pages to Alertmanager: the labels every page
// carries (alerting.labels, --alerting.label) and the external URL its links start with.
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

}  // namespace

absl::Status CheckLabelName(std::string_view name) {
  bool valid = !name.empty();
  for (size_t i = 0; valid && i < name.size(); ++i) {
    const unsigned char c = name[i];
    valid = absl::ascii_isalpha(c) || c == '_' || (i > 0 && absl::ascii_isdigit(c));
  }
  if (!valid) {
    return Invalid(absl::StrFormat("label name \"%s\" is not valid: use letters, digits and _, "
                                   "not starting with a digit", name));
  }
  if (name.substr(0, 2) == "__") {
    return Invalid(absl::StrFormat("label name \"%s\" is reserved (names starting with __ are "
                                   "Prometheus' own)", name));
  }
  return absl::OkStatus();
}

absl::Status CheckExternalUrl(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const std::string_view scheme = url.substr(0, scheme_end);
  const std::string_view rest =
      scheme_end == std::string_view::npos ? "" : url.substr(scheme_end + 3);
  if ((scheme != "http" && scheme != "https") || rest.empty() || rest[0] == '/' ||
      rest.find_first_of("?# ") != std::string_view::npos) {
    return Invalid(absl::StrFormat(
        "external URL \"%s\" must be an absolute http:// or https:// URL without ? or #, "
        "e.g. https://stagewatch.example.org or http://node-1:9617/stagewatch", url));
  }
  return absl::OkStatus();
}

}  // namespace stagewatch::config_internal

