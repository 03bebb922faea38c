// What every section's parser (config_<section>.cc) reads values with: a map's keys dispatched
// to their fields, and typed values checked, each problem recorded with its position.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "config/yaml_diagnostics.h"
#include "yaml-cpp/yaml.h"

namespace stagewatch::config_internal {

// A value, where to blame it, and its dotted name for messages ("web.listen_address").
struct ConfigValue {
  YAML::Node node;
  YAML::Mark mark;
  std::string name;
};

// A key of a map and what reads its value.
struct ConfigField {
  std::string key;
  std::function<void(const ConfigValue&)> handle;
  bool listed = true;  // false: a removed key, handled only to say so, never suggested
};

using Check = std::function<absl::Status(std::string_view)>;

// Reads values into the configuration, recording each problem in `diag` and leaving the
// setting as it was (its default), so that one pass reports every problem of a file.
class ConfigReader {
 public:
  explicit ConfigReader(Diagnostics& diag) : diag_(diag) {}

  // Records a problem found by a section's own checks.
  void Problem(const YAML::Mark& mark, std::string_view message) { diag_.Add(mark, message); }

  // Dispatches each key of a map to its field; reports unknown and repeated keys.
  void ParseMap(const ConfigValue& map, std::string_view where,
                const std::vector<ConfigField>& fields, std::string_view noun = "key",
                std::string_view allowed_label = "allowed");

  bool ReadString(const ConfigValue& v, std::string& out);
  // Reads a string and keeps it only if `check` finds no problem.
  void ReadChecked(const ConfigValue& v, std::string& out, const Check& check);
  void ReadBool(const ConfigValue& v, bool& out);
  void ReadInt(const ConfigValue& v, int min, int max, int& out);
  // units.h's ParseDuration: "200ms", "1m30s", "7d"; at least `min`.
  void ReadDuration(const ConfigValue& v, absl::Duration& out,
                    absl::Duration min = absl::ZeroDuration());
  // Reads a list of strings, keeping the entries `check` finds no problem with.
  void ReadStringList(const ConfigValue& v, std::vector<std::string>& out, const Check& check);
  void ReadPositive(const ConfigValue& v, double& out) { ReadAtLeast(v, 0, out); }
  void ReadAtLeastOne(const ConfigValue& v, double& out) { ReadAtLeast(v, 1, out); }
  void ReadAtLeast(const ConfigValue& v, double min, double& out);
  // A number in (0, 1].
  void ReadFraction(const ConfigValue& v, double& out);
  // A number in [0, 1): a share that may be none but not all.
  void ReadShare(const ConfigValue& v, double& out);

 private:
  Diagnostics& diag_;
};

}  // namespace stagewatch::config_internal
