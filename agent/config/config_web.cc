// The `web:` section: where the metrics are served.
#include "config/config_sections.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {

void ParseWeb(ConfigReader& r, const ConfigValue& section, WebConfig& web) {
  r.ParseMap(section, " in web", {
      {"listen_address",
       [&](const ConfigValue& v) { r.ReadChecked(v, web.listen_address, CheckListenAddress); }},
      {"telemetry_path",
       [&](const ConfigValue& v) { r.ReadChecked(v, web.telemetry_path, CheckTelemetryPath); }},
  });
}

}  // namespace stagewatch::config_internal
