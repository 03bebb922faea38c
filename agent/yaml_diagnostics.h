// Problems found in a YAML file, each as "file:line:col: message", reported together.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "yaml-cpp/yaml.h"

namespace stagewatch {

// Collects every problem with its position, so one run of the agent reports them all.
class Diagnostics {
 public:
  explicit Diagnostics(std::string_view source) : source_(source) {}

  // A null mark (a document with no content) blames line 1, column 1.
  void Add(const YAML::Mark& mark, std::string_view message) {
    const int line = mark.is_null() ? 1 : mark.line + 1;
    const int column = mark.is_null() ? 1 : mark.column + 1;
    errors_.push_back(
        {line, column, absl::StrFormat("%s:%d:%d: %s", source_, line, column, message)});
  }

  absl::Status ToStatus() {
    if (errors_.empty()) return absl::OkStatus();
    std::stable_sort(errors_.begin(), errors_.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::vector<std::string> lines;
    for (const Entry& entry : errors_) lines.push_back(entry.text);
    return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  }

 private:
  struct Entry {
    int line;
    int column;
    std::string text;
  };
  std::string source_;
  std::vector<Entry> errors_;
};

}  // namespace stagewatch
