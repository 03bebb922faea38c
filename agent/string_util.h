// Small std::string_view helpers shared across the agent. Debian's abseil has its own
// absl::string_view (not an alias of std::string_view), so absl::StrCat, SimpleAtoi and StrSplit
// do not take a std::string_view as is: convert with ToAbsl, or split with SplitNonEmpty.
// (Not named strings.h: agent/ is an include directory, and that would hide libc's <strings.h>.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace stagewatch {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// The parts of `text` between `sep`s, without empty ones ("/a//b/" → {"a", "b"}).
inline std::vector<std::string_view> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    size_t end = text.find(sep);
    std::string_view part = text.substr(0, end);
    if (!part.empty()) parts.push_back(part);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return parts;
}

// Whether `s` is one or more ASCII digits and nothing else.
inline bool AllDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// Parses bare digits into `value`: SimpleAtoi alone would also take a sign and surrounding blanks.
// False when `text` is not all digits or overflows.
inline bool ParseDigits(std::string_view text, uint64_t& value) {
  return AllDigits(text) && absl::SimpleAtoi(ToAbsl(text), &value);
}

// `text` percent-encoded for a URL's path segment or query value (RFC 3986 unreserved kept).
inline std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace stagewatch
