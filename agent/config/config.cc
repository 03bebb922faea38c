// The configuration's top level: each section handed to its parser (config_sections.h), and
// every problem of the file reported together.
#include "config/config.h"

#include "bounded_file.h"
#include "config/config_reader.h"
#include "config/config_sections.h"
#include "config/yaml_diagnostics.h"
#include "yaml-cpp/yaml.h"

namespace stagewatch {
namespace {

using namespace config_internal;  // NOLINT: the section parsers exist only for this file

void ParseTop(ConfigReader& r, const YAML::Node& root, const std::vector<std::string>& known,
              Config& c) {
  r.ParseMap(ConfigValue{root, root.Mark(), ""}, " at top level", {
      {"web", [&](const ConfigValue& v) { ParseWeb(r, v, c.web); }},
      {"log", [&](const ConfigValue& v) { ParseLog(r, v, c.log); }},
      {"cgroup", [&](const ConfigValue& v) { ParseCgroup(r, v, c.cgroup); }},
      {"discovery", [&](const ConfigValue& v) { ParseDiscovery(r, v, c.discovery); }},
      {"stages", [&](const ConfigValue& v) { ParseStages(r, v, c.stages); }},
      {"collectors", [&](const ConfigValue& v) { ParseCollectors(r, v, known, c.collectors); }},
      {"oom", [&](const ConfigValue& v) { ParseOom(r, v, c.oom); }},
      {"memory", [&](const ConfigValue& v) { ParseMemory(r, v, c.memory); }},
      {"anomalies", [&](const ConfigValue& v) { ParseAnomalies(r, v, c.anomalies); }},
      {"alerting", [&](const ConfigValue& v) { ParseAlerting(r, v, c.alerting); }},
      {"runs", [&](const ConfigValue& v) { ParseRuns(r, v, c.runs); }},
      {"pipelines", [&](const ConfigValue& v) { ParsePipelines(r, v, c.pipelines); }},
  });
}

absl::StatusOr<Config> Parse(std::string_view text, std::string_view source,
                             const std::vector<std::string>& collectors) {
  Diagnostics diag(source);
  ConfigReader reader(diag);
  Config config;
  for (const std::string& name : collectors) config.collectors[name] = true;
  ParseTop(reader, LoadOneDocument(text, diag), collectors, config);
  if (absl::Status status = diag.ToStatus(); !status.ok()) return status;
  return config;
}

}  // namespace

absl::StatusOr<Config> ParseConfig(std::string_view yaml_text, std::string_view source_name,
                                   const std::vector<std::string>& collectors) {
  return ParseYamlText(yaml_text, source_name,
                       [&] { return Parse(yaml_text, source_name, collectors); });
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path,
                                      const std::vector<std::string>& collectors) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, "config file");
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path, collectors);
}

absl::StatusOr<Config> DefaultConfig(const std::vector<std::string>& collectors) {
  return ParseConfig(DefaultConfigYaml(), "<embedded default>", collectors);
}

}  // namespace stagewatch
