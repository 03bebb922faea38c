#include "http_url.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

// RFC 3986 reg-name characters we accept in a host: letters, digits, '-', '.', '_'.
bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// RFC 3986 pchar plus '/': unreserved, sub-delims, ':', '@' and percent-escapes.
bool IsPathChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("-._~!$&'()*+,;=:@/%").find(c) != std::string_view::npos;
}

bool ValidPercentEscapes(std::string_view path) {
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') continue;
    if (i + 2 >= path.size() || !absl::ascii_isxdigit(static_cast<unsigned char>(path[i + 1])) ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(path[i + 2]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string RedactUrl(std::string_view raw) {
  const size_t sep = raw.find("://");
  const size_t start = sep == std::string_view::npos ? 0 : sep + 3;
  const size_t end = raw.find_first_of("/?#", start);
  const std::string_view authority = raw.substr(start, end == std::string_view::npos
                                                           ? std::string_view::npos
                                                           : end - start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(raw);
  return absl::StrCat(std::string(raw.substr(0, start)), "***",
                      std::string(raw.substr(start + at)));
}

absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view raw, std::string_view what) {
  const std::string shown = RedactUrl(raw);
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " \"", shown, "\": ", std::string(why)));
  };
  if (raw.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is empty"));
  for (char c : raw) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return bad("spaces, control and non-ASCII characters are not allowed (percent-encode "
                 "them in the path)");
    }
  }
  const size_t sep = raw.find("://");
  if (sep == std::string_view::npos) {
    return bad(absl::StrCat("no scheme; write http://", shown, " (or https://)"));
  }
  HttpUrl url;
  url.scheme = absl::AsciiStrToLower(std::string(raw.substr(0, sep)));
  if (url.scheme != "http" && url.scheme != "https") {
    return bad(absl::StrCat("scheme \"", url.scheme, "\" is not supported; use http:// or https://"));
  }
  const std::string_view rest = raw.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad("a query or fragment is not allowed; give the base URL, e.g. http://host:9093");
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) {
    return bad("credentials in the URL are not supported; use alerting.basic_auth (with "
               "password_file) or bearer_token");
  }
  if (authority.empty()) return bad("no host; write e.g. http://127.0.0.1:9093");

  std::string_view port_text;
  bool has_port = false;
  if (authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address, expected ']'");
    url.host = std::string(authority.substr(1, close - 1));
    in6_addr address{};
    if (inet_pton(AF_INET6, url.host.c_str(), &address) != 1) {
      return bad(absl::StrCat("\"[", url.host, "]\" is not an IPv6 address"));
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("expected ':port' after the IPv6 address");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
      return bad("an IPv6 address must be in brackets, e.g. http://[::1]:9093");
    }
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
    if (url.host.empty()) return bad("no host; write e.g. http://127.0.0.1:9093");
    if (url.host.size() > 253 || !std::all_of(url.host.begin(), url.host.end(), IsHostChar) ||
        url.host.front() == '.' || url.host.front() == '-' || absl::StrContains(url.host, "..")) {
      return bad(absl::StrCat("host \"", url.host, "\" is not a valid host name or address"));
    }
  }
  if (has_port) {
    int port = 0;
    const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                        std::all_of(port_text.begin(), port_text.end(), [](char c) {
                          return absl::ascii_isdigit(static_cast<unsigned char>(c));
                        });
    if (!digits || !absl::SimpleAtoi(absl::string_view(port_text.data(), port_text.size()), &port) ||
        port < 1 || port > 65535) {
      return bad(absl::StrCat("port \"", std::string(port_text), "\" is not a number from 1 to 65535"));
    }
    url.port = port;
  } else {
    url.port = url.scheme == "https" ? 443 : 80;
  }
  if (!std::all_of(path.begin(), path.end(), IsPathChar) || !ValidPercentEscapes(path)) {
    return bad("the path has characters a URL path cannot have; percent-encode them");
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (absl::StrContains(path, "/api/v1/alerts") || absl::StrContains(path, "/api/v2/alerts")) {
    return bad("give Alertmanager's base URL (with its --web.route-prefix, if any); "
               "/api/v2/alerts is appended");
  }
  url.prefix = path;
  const std::string host_text =
      url.host.find(':') != std::string::npos ? absl::StrCat("[", url.host, "]") : url.host;
  url.display = absl::StrCat(url.scheme, "://", host_text, ":", url.port, url.prefix);
  return url;
}

}  // namespace stagewatch
