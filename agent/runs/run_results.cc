#include "runs/run_results.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bounded_file.h"
#include "nlohmann/json.hpp"
#include "string_util.h"

namespace stagewatch {
namespace {

// A finite number as strtod reads it, the whole text.
std::optional<double> ParseNumber(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// Well-formed lead and continuation bytes (overlong forms are not looked for).
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const size_t more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                                  : (c & 0xf8) == 0xf0 ? 3 : 4;
    if (more > 3 || i + more >= s.size()) return false;
    for (size_t k = 1; k <= more; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += more + 1;
  }
  return true;
}

// Adds one result, or says why not.
void Add(std::string_view name, std::optional<double> value, std::string_view where,
         ParsedResults& out) {
  if (absl::Status s = CheckResultName(name); !s.ok()) {
    out.problems.push_back(absl::StrCat(ToAbsl(where), ": ", s.message()));
  } else if (!value) {
    out.problems.push_back(absl::StrFormat("%s: result \"%s\" is not a finite number", where,
                                           std::string(name)));
  } else if (out.values.size() >= kMaxResults && !out.values.count(std::string(name))) {
    out.problems.push_back(absl::StrFormat("%s: more than %d results; \"%s\" and the rest are "
                                           "skipped", where, kMaxResults, std::string(name)));
  } else {
    out.values[std::string(name)] = *value;
  }
}

}  // namespace

absl::Status CheckResultName(std::string_view name) {
  const bool valid =
      !name.empty() && name.size() <= kMaxResultNameBytes &&
      (absl::ascii_isalpha(name[0]) || name[0] == '_') &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '/';
      });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "result name \"%s\" is not valid; use up to %d letters, digits, \"_\", \".\", \"-\", "
      "\":\" and \"/\", starting with a letter or \"_\"",
      std::string(name.substr(0, 120)), kMaxResultNameBytes));
}

ParsedResults ParseResults(std::string_view text) {
  ParsedResults out;
  if (!ValidUtf8(text)) {
    out.problems.push_back("the results are not UTF-8 text; nothing was read");
    return out;
  }
  const absl::string_view trimmed = absl::StripAsciiWhitespace(ToAbsl(text));
  if (!trimmed.empty() && trimmed.front() == '{') {
    const nlohmann::json j =
        nlohmann::json::parse(std::string(trimmed), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      out.problems.push_back("the results look like JSON but are not a JSON object; write "
                             "{\"accuracy\": 0.95, \"rows\": 120000}");
      return out;
    }
    for (const auto& [name, value] : j.items()) {
      std::optional<double> v;
      if (value.is_number()) v = value.get<double>();
      Add(name, v, "JSON", out);
    }
    return out;
  }
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat("line ", line_no);
    if (words.size() != 2) {
      out.problems.push_back(absl::StrCat(where, ": write one result per line as `name value`, "
                                          "e.g. `accuracy 0.95`"));
      continue;
    }
    Add(std::string(words[0]), ParseNumber(std::string(words[1])), where, out);
  }
  return out;
}

ParsedResults ParseResultWords(const std::vector<std::string>& words) {
  ParsedResults out;
  for (const std::string& word : words) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) {
      out.problems.push_back(absl::StrFormat("\"%s\": write results as name=value, e.g. "
                                             "accuracy=0.95", word.substr(0, 120)));
      continue;
    }
    Add(std::string_view(word).substr(0, eq), ParseNumber(std::string_view(word).substr(eq + 1)),
        absl::StrCat("\"", word.substr(0, 120), "\""), out);
  }
  return out;
}

absl::StatusOr<ParsedResults> ReadResultsFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, "results file", kMaxResultsFileBytes);
  if (absl::IsNotFound(text.status())) return absl::NotFoundError("no results file");
  if (!text.ok()) {
    ParsedResults out;
    out.problems.push_back(absl::StrCat(text.status().message(), "; nothing was read (write a "
                                        "few named numbers, not data)"));
    return out;
  }
  return ParseResults(*text);
}

}  // namespace stagewatch
