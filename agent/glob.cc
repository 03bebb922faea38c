#include "glob.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// Length of the bracket expression starting at pattern[pos] == '[', or 0 if unterminated.
// A ']' right after '[' (or "[!" / "[^") is a literal member.
size_t ClassLength(std::string_view pattern, size_t pos) {
  size_t i = pos + 1;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == ']') return i - pos + 1;
  }
  return 0;
}

// Whether `c` is in the bracket expression `cls` ("[...]" including both brackets).
bool ClassMatches(std::string_view cls, char c) {
  size_t i = 1;
  const size_t end = cls.size() - 1;  // index of the closing ']'
  bool negate = false;
  if (i < end && (cls[i] == '!' || cls[i] == '^')) {
    negate = true;
    ++i;
  }
  bool found = false;
  while (i < end) {
    if (i + 2 < end && cls[i + 1] == '-') {
      found = found || (c >= cls[i] && c <= cls[i + 2]);
      i += 3;
    } else {
      found = found || c == cls[i];
      ++i;
    }
  }
  return found != negate;
}

// Matches one pattern token at pattern[*p] against `c`, advancing *p past the token.
// Returns false on mismatch. Tokens: '?', '[...]', '\x', or a literal character.
bool MatchToken(std::string_view pattern, size_t* p, char c) {
  const char t = pattern[*p];
  if (t == '?') {
    ++*p;
    return true;
  }
  if (t == '[') {
    if (size_t len = ClassLength(pattern, *p); len > 0) {
      bool ok = ClassMatches(pattern.substr(*p, len), c);
      *p += len;
      return ok;
    }
  }
  if (t == '\\' && *p + 1 < pattern.size()) {
    bool ok = pattern[*p + 1] == c;
    *p += 2;
    return ok;
  }
  ++*p;
  return t == c;
}

}  // namespace

absl::Status ValidateGlob(std::string_view pattern) {
  if (pattern.empty()) return absl::InvalidArgumentError("empty glob pattern");
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      ++i;  // the next character is literal
    } else if (pattern[i] == '[') {
      size_t len = ClassLength(pattern, i);
      if (len == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("glob \"", ToAbsl(pattern), "\": '[' at offset ", i, " is never closed"));
      }
      if (pattern.substr(i, len).find('/') != std::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("glob \"", ToAbsl(pattern), "\": a [...] class cannot contain '/'"));
      }
      i += len - 1;
    }
  }
  for (std::string_view component : SplitNonEmpty(pattern, '/')) {
    if (component != "**" && component.find("**") != std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "glob \"", ToAbsl(pattern), "\": '**' must be a whole path component, as in /a/**/b"));
    }
  }
  return absl::OkStatus();
}

bool GlobMatchComponent(std::string_view pattern, std::string_view component) {
  // Backtracking over the last '*' only: every other token matches exactly one character.
  size_t p = 0, s = 0;
  size_t star_p = std::string_view::npos, star_s = 0;
  while (s < component.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      while (p < pattern.size() && pattern[p] == '*') ++p;
      star_p = p;
      star_s = s;
      continue;
    }
    size_t next = p;
    if (p < pattern.size() && component[s] != '/' && MatchToken(pattern, &next, component[s])) {
      p = next;
      ++s;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    s = ++star_s;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool GlobMatchPath(std::string_view pattern, std::string_view path) {
  // Both are anchored at the hierarchy root; a relative pattern never matches an absolute path.
  const bool pattern_abs = !pattern.empty() && pattern.front() == '/';
  const bool path_abs = !path.empty() && path.front() == '/';
  if (pattern_abs != path_abs) return false;
  const std::vector<std::string_view> pat = SplitNonEmpty(pattern, '/');
  const std::vector<std::string_view> parts = SplitNonEmpty(path, '/');
  // Same scheme as GlobMatchComponent, one level up: '**' is the star, components the tokens.
  size_t p = 0, s = 0;
  size_t star_p = std::string_view::npos, star_s = 0;
  while (s < parts.size()) {
    if (p < pat.size() && pat[p] == "**") {
      while (p < pat.size() && pat[p] == "**") ++p;
      star_p = p;
      star_s = s;
      continue;
    }
    if (p < pat.size() && GlobMatchComponent(pat[p], parts[s])) {
      ++p;
      ++s;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    s = ++star_s;
  }
  while (p < pat.size() && pat[p] == "**") ++p;
  return p == pat.size();
}

}  // namespace stagewatch
