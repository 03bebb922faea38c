// The `collectors:` section: each signal's collector switched on or off by name.
#include "config/config_sections.h"

namespace stagewatch::config_internal {

void ParseCollectors(ConfigReader& r, const ConfigValue& section,
                     const std::vector<std::string>& known,
                     std::map<std::string, bool>& collectors) {
  std::vector<ConfigField> fields;
  for (const std::string& name : known) {
    fields.push_back({name, [&r, &collectors, name](const ConfigValue& v) {
                        r.ReadBool(v, collectors[name]);
                      }});
  }
  r.ParseMap(section, "", fields, "collector", "known collectors");
}

}  // namespace stagewatch::config_internal
