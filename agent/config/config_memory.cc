// The `memory:` section: how memory use is sampled and when it counts as near the limit.
#include "absl/strings/str_format.h"
#include "config/config_sections.h"

namespace stagewatch::config_internal {

void ParseMemory(ConfigReader& r, const ConfigValue& section, MemoryConfig& memory) {
  r.ParseMap(section, " in memory", {
      {"near_limit_fraction",
       [&](const ConfigValue& v) { r.ReadFraction(v, memory.near_limit_fraction); }},
      {"sample_interval", [&](const ConfigValue& v) {
         r.ReadDuration(v, memory.sample_interval);
         if (memory.sample_interval < absl::Milliseconds(100)) {
           r.Problem(v.mark, absl::StrFormat("%s must be at least 100ms: faster sampling "
                                             "costs more CPU than it tells", v.name));
           memory.sample_interval = absl::Milliseconds(100);
         }
       }},
      {"max_limit_domains",
       [&](const ConfigValue& v) { r.ReadInt(v, 1, 100000, memory.max_limit_domains); }},
      {"task_iterator", [&](const ConfigValue& v) { r.ReadBool(v, memory.task_iterator); }},
  });
}

}  // namespace stagewatch::config_internal
