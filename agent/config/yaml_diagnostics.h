// Problems found in a YAML file, each as "file:line:col: message", reported together.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "yaml-cpp/eventhandler.h"
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
    errors_.push_back({line, column,
                       absl::StrFormat("%s:%d:%d: %s", source_, line, column, Printable(message))});
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
  // Messages quote the input (and yaml-cpp's quote single characters): a control character
  // there would break the one-problem-per-line form or a terminal, so it is escaped.
  static std::string Printable(std::string_view message) {
    std::string out;
    for (const char c : message) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7f) {
        absl::StrAppendFormat(&out, "\\x%02x", byte);
      } else {
        out.push_back(c);
      }
    }
    return out;
  }

  struct Entry {
    int line;
    int column;
    std::string text;
  };
  std::string source_;
  std::vector<Entry> errors_;
};

// YAML allows no control character but tab, line feed and carriage return (YAML 1.2,
// c-printable), and yaml-cpp 0.7 can loop for ever on some (a NUL among them): refuse them
// before parsing, at their position. Returns false after adding the problem to `diag`.
inline bool CheckYamlCharacters(std::string_view text, Diagnostics& diag) {
  int line = 0, column = 0;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t' && c != '\n' && c != '\r') || byte == 0x7f) {
      YAML::Mark mark;
      mark.line = line;
      mark.column = column;
      diag.Add(mark, absl::StrFormat("control character 0x%02x is not allowed in YAML; is this "
                                     "a text file?", byte));
      return false;
    }
    if (c == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
  return true;
}

// Loads the first YAML document of `text`; a second one is a problem added to `diag`.
// Not YAML::LoadAll: yaml-cpp 0.7's LoadAll loops for ever on a document that starts with
// ',' (found by tests/fuzz), so documents are counted here with a bounded loop. Throws
// YAML::Exception on a syntax error, which carries its position.
inline YAML::Node LoadOneDocument(std::string_view text, Diagnostics& diag) {
  // Records where each document starts and nothing else.
  struct DocumentMarks : YAML::EventHandler {
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  };
  const std::string copy(text);
  YAML::Node document = YAML::Load(copy);
  std::istringstream in(copy);
  YAML::Parser parser(in);
  DocumentMarks marks;
  for (int i = 0; i < 2 && parser.HandleNextDocument(marks); ++i) {
  }
  if (marks.starts.size() > 1) {
    const bool stuck = marks.starts[1].pos == marks.starts[0].pos;
    diag.Add(marks.starts[1], stuck ? "unexpected character: a YAML document cannot start here"
                                    : "expected one YAML document, found more");
  }
  return document;
}

// Runs `parse` (a parser that reads the text with LoadOneDocument) behind the checks every
// YAML file gets: control characters refused first, syntax errors (YAML::ParserException)
// reported at their position.
template <typename Parse>
auto ParseYamlText(std::string_view text, std::string_view source, Parse parse)
    -> decltype(parse()) {
  Diagnostics diag(source);
  if (!CheckYamlCharacters(text, diag)) return diag.ToStatus();
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    diag.Add(e.mark, e.msg);
    return diag.ToStatus();
  }
}

}  // namespace stagewatch
