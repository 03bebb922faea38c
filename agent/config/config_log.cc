// The `log:` section: the log's level and format.
#include "config/config_sections.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {

void ParseLog(ConfigReader& r, const ConfigValue& section, LogConfig& log) {
  r.ParseMap(section, " in log", {
      {"level", [&](const ConfigValue& v) { r.ReadChecked(v, log.level, CheckLogLevel); }},
      {"format", [&](const ConfigValue& v) { r.ReadChecked(v, log.format, CheckLogFormat); }},
  });
}

}  // namespace stagewatch::config_internal
