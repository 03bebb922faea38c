// The `oom:` section: which processes' kills count as user-space OOM kills.
#include <limits>

#include "config/config_sections.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {

void ParseOom(ConfigReader& r, const ConfigValue& section, OomConfig& oom) {
  r.ParseMap(section, " in oom", {
      {"userspace_killers", [&](const ConfigValue& v) {
         r.ReadStringList(v, oom.userspace_killers, CheckUserspaceKiller);
       }},
      {"userspace_killer_paths", [&](const ConfigValue& v) {
         r.ReadStringList(v, oom.userspace_killer_paths, CheckUserspaceKillerPath);
       }},
      {"userspace_killer_max_uid", [&](const ConfigValue& v) {
         r.ReadInt(v, 0, std::numeric_limits<int>::max(), oom.userspace_killer_max_uid);
       }},
  });
}

}  // namespace stagewatch::config_internal
