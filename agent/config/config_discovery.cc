// The `discovery:` section: stages named by the directories `stagewatch run` creates.
#include "config/config_sections.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {

void ParseDiscovery(ConfigReader& r, const ConfigValue& section, DiscoveryConfig& discovery) {
  r.ParseMap(section, " in discovery", {
      {"enabled", [&](const ConfigValue& v) { r.ReadBool(v, discovery.enabled); }},
      {"directory", [&](const ConfigValue& v) {
         r.ReadChecked(v, discovery.directory, CheckDiscoveryDirectory);
       }},
      {"pipeline", [&](const ConfigValue& v) { r.ReadString(v, discovery.pipeline); }},
      {"max_stages", [&](const ConfigValue& v) { r.ReadInt(v, 0, 1000, discovery.max_stages); }},
      {"forget_after", [&](const ConfigValue& v) { r.ReadDuration(v, discovery.forget_after); }},
  });
}

}  // namespace stagewatch::config_internal
