#include "config/alertmanager_url.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

struct CurlUrlFree {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

// One part of a parsed URL; nullopt when the URL has none.
std::optional<std::string> Part(CURLU* url, CURLUPart part, unsigned int flags = 0) {
  char* text = nullptr;
  if (curl_url_get(url, part, &text, flags) != CURLUE_OK || text == nullptr) return std::nullopt;
  std::string out(text);
  curl_free(text);
  return out;
}

// host[:port] as written, without any user:password@: curl says what is wrong, this says where.
std::string_view HostAndPort(std::string_view raw) {
  const size_t sep = raw.find("://");
  std::string_view rest = sep == std::string_view::npos ? raw : raw.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  const size_t at = rest.rfind('@');
  return at == std::string_view::npos ? rest : rest.substr(at + 1);
}

// The text after the port's ':' (outside an IPv6 address's brackets); nullopt without one.
std::optional<std::string_view> WrittenPort(std::string_view host_and_port) {
  const size_t close = host_and_port.rfind(']');
  const size_t colon = host_and_port.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close)) {
    return std::nullopt;
  }
  return host_and_port.substr(colon + 1);
}

// What to say when curl refuses the URL.
std::string WhyCurlRefused(CURLUcode code, std::string_view host_and_port) {
  const std::string_view port = WrittenPort(host_and_port).value_or("");
  switch (code) {
    case CURLUE_NO_HOST:
      return "no host; write e.g. http://127.0.0.1:9093";
    case CURLUE_BAD_IPV6:
      if (host_and_port.find(']') == std::string_view::npos) {
        return "unterminated IPv6 address, expected ']'";
      }
      return absl::StrCat("\"", std::string(host_and_port.substr(0, host_and_port.find(']') + 1)),
                          "\" is not an IPv6 address");
    case CURLUE_BAD_PORT_NUMBER:
      if (!host_and_port.starts_with("[") &&
          std::count(host_and_port.begin(), host_and_port.end(), ':') > 1) {
        return "an IPv6 address must be in brackets, e.g. http://[::1]:9093";
      }
      return absl::StrCat("port \"", std::string(port), "\" is not a number from 1 to 65535");
    case CURLUE_BAD_HOSTNAME:
      return absl::StrCat("host \"", std::string(host_and_port.substr(0, host_and_port.rfind(':'))),
                          "\" is not a valid host name or address");
    default:
      return absl::StrCat("not a valid URL (", curl_url_strerror(code),
                          "); write e.g. http://127.0.0.1:9093");
  }
}

// RFC 3986 pchar plus '/', with well-formed percent-escapes: curl passes the path on as written.
bool IsValidPath(std::string_view path) {
  for (size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size() || !absl::ascii_isxdigit(path[i + 1]) ||
          !absl::ascii_isxdigit(path[i + 2])) {
        return false;
      }
    } else if (!absl::ascii_isalnum(c) &&
               std::string_view("-._~!$&'()*+,;=:@/").find(c) == std::string_view::npos) {
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
  const std::string_view authority =
      raw.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(raw);
  return absl::StrCat(std::string(raw.substr(0, start)), "***", std::string(raw.substr(start + at)));
}

absl::StatusOr<AlertmanagerUrl> ParseAlertmanagerUrl(std::string_view raw) {
  const std::string shown = RedactUrl(raw);
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("alertmanager URL \"", shown, "\": ", std::string(why)));
  };
  if (raw.empty()) return absl::InvalidArgumentError("alertmanager URL is empty");
  // curl would percent-encode or refuse these with a vaguer message.
  for (char c : raw) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return bad("spaces, control and non-ASCII characters are not allowed (percent-encode "
                 "them in the path)");
    }
  }
  if (raw.find("://") == std::string_view::npos) {
    return bad(absl::StrCat("no scheme; write http://", shown, " (or https://)"));
  }
  std::unique_ptr<CURLU, CurlUrlFree> url(curl_url());
  if (url == nullptr) return absl::ResourceExhaustedError("alertmanager URL: out of memory");
  const std::string text(raw);
  // Any scheme parses, so an unsupported one gets the message below rather than curl's.
  if (CURLUcode code = curl_url_set(url.get(), CURLUPART_URL, text.c_str(),
                                    CURLU_NON_SUPPORT_SCHEME);
      code != CURLUE_OK) {
    return bad(WhyCurlRefused(code, HostAndPort(raw)));
  }
  AlertmanagerUrl out;
  out.scheme = absl::AsciiStrToLower(Part(url.get(), CURLUPART_SCHEME).value_or(""));
  if (out.scheme != "http" && out.scheme != "https") {
    return bad(absl::StrCat("scheme \"", out.scheme, "\" is not supported; use http:// or https://"));
  }
  if (Part(url.get(), CURLUPART_USER) || Part(url.get(), CURLUPART_PASSWORD)) {
    return bad("credentials in the URL are not supported; use alerting.basic_auth (with "
               "password_file) or bearer_token");
  }
  if (Part(url.get(), CURLUPART_QUERY) || Part(url.get(), CURLUPART_FRAGMENT) ||
      raw.find_first_of("?#") != std::string_view::npos) {
    return bad("a query or fragment is not allowed; give the base URL, e.g. http://host:9093");
  }
  const std::string host = Part(url.get(), CURLUPART_HOST).value_or("");
  if (absl::StartsWith(host, "[")) {
    if (Part(url.get(), CURLUPART_ZONEID)) {
      return bad(absl::StrCat("\"", std::string(HostAndPort(raw).substr(0, HostAndPort(raw).find(']') + 1)),
                              "\" has a zone ID, which is not supported; use a routable address"));
    }
    out.host = host.substr(1, host.size() - 2);
  } else {
    // curl takes any name its resolver might; these never resolve.
    if (host.empty() || host.front() == '.' || host.front() == '-' ||
        absl::StrContains(host, "..")) {
      return bad(absl::StrCat("host \"", host, "\" is not a valid host name or address"));
    }
    out.host = host;
  }
  // curl reads "am:" as the default port and "am:0" as port 0; neither is a port to send to.
  if (const std::optional<std::string_view> written = WrittenPort(HostAndPort(raw))) {
    const std::optional<std::string> port = Part(url.get(), CURLUPART_PORT);
    if (!port || !absl::SimpleAtoi(*port, &out.port) || out.port < 1) {
      return bad(absl::StrCat("port \"", std::string(*written), "\" is not a number from 1 to 65535"));
    }
  } else if (!absl::SimpleAtoi(Part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or(""),
                               &out.port)) {
    return bad("no port and no default port for the scheme; write e.g. http://host:9093");
  }
  std::string path = Part(url.get(), CURLUPART_PATH).value_or("");
  if (!IsValidPath(path)) {
    return bad("the path has characters a URL path cannot have; percent-encode them");
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (absl::StrContains(path, "/api/v1/alerts") || absl::StrContains(path, "/api/v2/alerts")) {
    return bad("give Alertmanager's base URL (with its --web.route-prefix, if any); "
               "/api/v2/alerts is appended");
  }
  out.prefix = path;
  out.display = absl::StrCat(out.scheme, "://", host, ":", out.port, out.prefix);
  out.endpoint = absl::StrCat(out.display, "/api/v2/alerts");
  return out;
}

}  // namespace stagewatch
