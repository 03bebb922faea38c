// The `memory:` section: how memory use is sampled and when it counts as near the limit.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/config_sections.h"

namespace stagewatch {

absl::StatusOr<PageFaultSource> ParsePageFaultSource(std::string_view text) {
  for (PageFaultSource s : {PageFaultSource::kAuto, PageFaultSource::kMemcg,
                            PageFaultSource::kBpf}) {
    if (text == PageFaultSourceName(s)) return s;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown page fault source \"%s\"; use auto (memory.stat where the memory controller "
      "is there, else BPF), memcg or bpf", text));
}

std::string_view PageFaultSourceName(PageFaultSource source) {
  switch (source) {
    case PageFaultSource::kMemcg: return "memcg";
    case PageFaultSource::kBpf: return "bpf";
    case PageFaultSource::kAuto: break;
  }
  return "auto";
}

}  // namespace stagewatch

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
      {"fault_source", [&](const ConfigValue& v) {
         std::string text;
         if (!r.ReadString(v, text)) return;
         absl::StatusOr<PageFaultSource> source = ParsePageFaultSource(text);
         if (source.ok()) {
           memory.fault_source = *source;
         } else {
           r.Problem(v.mark, absl::StrCat(v.name, ": ", source.status().message()));
         }
       }},
  });
}

}  // namespace stagewatch::config_internal
