#include "config/config_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/config_validate.h"
#include "units.h"

namespace stagewatch::config_internal {
namespace {

// Quoted scalars ("true", "32") are strings in YAML; accepting them as bools or numbers would
// hide a mistake. yaml-cpp tags non-plain scalars "!".
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

}  // namespace

void ConfigReader::ParseMap(const ConfigValue& map, std::string_view where,
                            const std::vector<ConfigField>& fields, std::string_view noun,
                            std::string_view allowed_label) {
  if (map.node.IsNull()) return;  // `section:` alone keeps the defaults
  if (!map.node.IsMap()) {
    diag_.Add(map.mark, absl::StrFormat("%s must be a map of keys",
                                        map.name.empty() ? "the configuration" : map.name));
    return;
  }
  std::vector<std::string> allowed, seen;
  for (const ConfigField& field : fields) {
    if (field.listed) allowed.push_back(field.key);
  }
  for (auto it = map.node.begin(); it != map.node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    const std::string name = key.IsScalar() ? key.Scalar() : "";
    const auto field = std::find_if(fields.begin(), fields.end(),
                                    [&](const ConfigField& f) { return f.key == name; });
    if (field == fields.end()) {
      diag_.Add(key.Mark(), UnknownNameMessage(noun, name, where, allowed, allowed_label));
    } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      diag_.Add(key.Mark(), absl::StrFormat("%s \"%s\"%s is set twice", noun, name, where));
    } else {
      seen.push_back(name);
      // A null value (`key:` alone) is marked at the next token, so blame its key instead.
      field->handle(ConfigValue{value, value.IsNull() ? key.Mark() : value.Mark(),
                                map.name.empty() ? name : absl::StrCat(map.name, ".", name)});
    }
  }
}

bool ConfigReader::ReadString(const ConfigValue& v, std::string& out) {
  if (!v.node.IsScalar()) {
    diag_.Add(v.mark, absl::StrFormat("%s must be a string", v.name));
    return false;
  }
  out = v.node.Scalar();
  return true;
}

void ConfigReader::ReadChecked(const ConfigValue& v, std::string& out, const Check& check) {
  std::string text;
  if (!ReadString(v, text)) return;
  if (const absl::Status problem = check(text); !problem.ok()) {
    diag_.Add(v.mark, std::string(problem.message()));
    return;
  }
  out = text;
}

void ConfigReader::ReadBool(const ConfigValue& v, bool& out) {
  if (!IsPlainScalar(v.node) || !YAML::convert<bool>::decode(v.node, out)) {
    diag_.Add(v.mark, absl::StrFormat("%s must be true or false", v.name));
  }
}

void ConfigReader::ReadInt(const ConfigValue& v, int min, int max, int& out) {
  long long number = 0;
  if (!IsPlainScalar(v.node) || !YAML::convert<long long>::decode(v.node, number)) {
    diag_.Add(v.mark, absl::StrFormat("%s must be an integer", v.name));
  } else if (number < min || number > max) {
    const std::string range = max == std::numeric_limits<int>::max()
                                  ? absl::StrFormat("at least %d", min)
                                  : absl::StrFormat("between %d and %d", min, max);
    diag_.Add(v.mark, absl::StrFormat("%s must be %s (got %d)", v.name, range, number));
  } else {
    out = static_cast<int>(number);
  }
}

void ConfigReader::ReadDuration(const ConfigValue& v, absl::Duration& out, absl::Duration min) {
  std::string text;
  if (!ReadString(v, text)) return;
  const absl::StatusOr<absl::Duration> duration = ParseDuration(text, v.name);
  if (!duration.ok()) {
    diag_.Add(v.mark, std::string(duration.status().message()));
  } else if (*duration < min) {
    diag_.Add(v.mark, absl::StrFormat("%s must be at least %s (got \"%s\")", v.name,
                                      absl::FormatDuration(min), text));
  } else {
    out = *duration;
  }
}

void ConfigReader::ReadStringList(const ConfigValue& v, std::vector<std::string>& out,
                                  const Check& check) {
  out.clear();
  if (v.node.IsNull()) return;
  if (!v.node.IsSequence()) {
    diag_.Add(v.mark, absl::StrFormat("%s must be a list of strings, e.g. [a, b]", v.name));
    return;
  }
  for (const YAML::Node& item : v.node) {
    if (!item.IsScalar()) {
      diag_.Add(item.Mark(), absl::StrFormat("each entry of %s must be a string", v.name));
    } else if (const absl::Status problem = check(item.Scalar()); !problem.ok()) {
      diag_.Add(item.Mark(), std::string(problem.message()));
    } else {
      out.push_back(item.Scalar());
    }
  }
}

void ConfigReader::ReadAtLeast(const ConfigValue& v, double min, double& out) {
  double number = 0;
  if (!IsPlainScalar(v.node) || !YAML::convert<double>::decode(v.node, number) ||
      !(number >= min) || !std::isfinite(number)) {
    diag_.Add(v.mark, absl::StrFormat("%s must be a number, %g or more", v.name, min));
  } else {
    out = number;
  }
}

void ConfigReader::ReadShare(const ConfigValue& v, double& out) {
  double number = 0;
  if (!IsPlainScalar(v.node) || !YAML::convert<double>::decode(v.node, number) ||
      !(number >= 0 && number < 1)) {
    diag_.Add(v.mark, absl::StrFormat("%s must be a number from 0 up to (not including) 1, "
                                      "e.g. 0.1", v.name));
  } else {
    out = number;
  }
}

void ConfigReader::ReadFraction(const ConfigValue& v, double& out) {
  double number = 0;
  if (!IsPlainScalar(v.node) || !YAML::convert<double>::decode(v.node, number) ||
      !(number > 0 && number <= 1)) {
    diag_.Add(v.mark, absl::StrFormat("%s must be a number above 0 and at most 1, e.g. 0.9",
                                      v.name));
  } else {
    out = number;
  }
}

}  // namespace stagewatch::config_internal
