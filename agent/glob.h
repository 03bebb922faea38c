// Glob matching for cgroup paths: `*` and `?` stay within one path component, `**` spans
// any number of whole components (including none), `[...]` is a character class.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace stagewatch {

// Checks that a pattern is well formed (balanced brackets, `**` only as a whole component).
absl::Status ValidateGlob(std::string_view pattern);

// Matches a whole path such as "/a/b/c" against a path pattern such as "/**/train".
bool GlobMatchPath(std::string_view pattern, std::string_view path);

// Matches a single component (no '/').
bool GlobMatchComponent(std::string_view pattern, std::string_view component);

}  // namespace stagewatch
