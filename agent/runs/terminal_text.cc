#include "runs/terminal_text.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace stagewatch {
namespace {

// The length of the valid UTF-8 sequence at `text`'s start (2 to 4), or 0 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF). Sets `code` to its code point.
size_t Utf8Length(std::string_view text, uint32_t& code) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t n = 0;
  uint32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2, min = 0x80, code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3, min = 0x800, code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4, min = 0x10000, code = lead & 0x07;
  } else {
    return 0;
  }
  if (text.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    code = code << 6 | (byte(i) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return n;
}

void AppendEscaped(std::string_view bytes, std::string& out) {
  for (unsigned char c : bytes) absl::StrAppendFormat(&out, "\\x%02x", c);
}

}  // namespace

std::string TerminalText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const unsigned char c = text[0];
    size_t n = 1;
    bool control = c < 0x20 || c == 0x7f;
    if (c >= 0x80) {
      uint32_t code = 0;
      n = Utf8Length(text, code);
      control = n == 0 || code <= 0x9f;
      n = n == 0 ? 1 : n;
    }
    if (control) {
      AppendEscaped(text.substr(0, n), out);
    } else {
      out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace stagewatch
