// One parser per section of the configuration (config_<section>.cc), called by ParseConfig
// (config.cc) with the section's value; each records its problems through the reader.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_reader.h"

namespace stagewatch::config_internal {

void ParseWeb(ConfigReader& reader, const ConfigValue& section, WebConfig& web);
void ParseLog(ConfigReader& reader, const ConfigValue& section, LogConfig& log);
void ParseCgroup(ConfigReader& reader, const ConfigValue& section, CgroupConfig& cgroup);
void ParseDiscovery(ConfigReader& reader, const ConfigValue& section,
                    DiscoveryConfig& discovery);
void ParseStages(ConfigReader& reader, const ConfigValue& section,
                 std::vector<StageConfig>& stages);
// `known`: the collectors the section may switch, in the order an error lists them.
void ParseCollectors(ConfigReader& reader, const ConfigValue& section,
                     const std::vector<std::string>& known,
                     std::map<std::string, bool>& collectors);
void ParseOom(ConfigReader& reader, const ConfigValue& section, OomConfig& oom);
void ParseMemory(ConfigReader& reader, const ConfigValue& section, MemoryConfig& memory);
void ParseAnomalies(ConfigReader& reader, const ConfigValue& section, AnomalyConfig& anomalies);
void ParseAlerting(ConfigReader& reader, const ConfigValue& section, AlertingConfig& alerting);
void ParseRuns(ConfigReader& reader, const ConfigValue& section, RunsConfig& runs);
void ParsePipelines(ConfigReader& reader, const ConfigValue& section, PipelinesConfig& pipelines);

}  // namespace stagewatch::config_internal
