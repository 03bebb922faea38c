// The `pipelines:` section: a map from pipeline name to when its nights start and its window end.
#include <string>

#include "absl/strings/str_format.h"
#include "config/config_sections.h"
#include "config/config_validate.h"
#include "units.h"

namespace stagewatch::config_internal {
namespace {

void ReadTimeOfDay(ConfigReader& r, const ConfigValue& v, absl::Duration& out) {
  std::string text;
  if (!r.ReadString(v, text)) return;
  absl::StatusOr<absl::Duration> at = ParseTimeOfDay(text, v.name);
  if (!at.ok()) {
    r.Problem(v.mark, std::string(at.status().message()));
    return;
  }
  out = *at;
}

void ParsePipeline(ConfigReader& r, const ConfigValue& v, PipelineConfig& pipeline) {
  if (v.node.IsNull()) return;  // `nightly:` alone: the defaults
  r.ParseMap(v, absl::StrFormat(" in %s", v.name), {
      {"night_starts", [&](const ConfigValue& f) { ReadTimeOfDay(r, f, pipeline.night_starts); }},
      {"deadline", [&](const ConfigValue& f) {
         if (f.node.IsNull()) {
           r.Problem(f.mark, absl::StrFormat("%s needs a time of day, e.g. 06:00; leave the key "
                                             "out for no deadline", f.name));
           return;
         }
         absl::Duration deadline = absl::InfiniteDuration();  // left so when it does not parse
         ReadTimeOfDay(r, f, deadline);
         if (deadline != absl::InfiniteDuration()) pipeline.deadline = deadline;
       }},
  });
}

}  // namespace

void ParsePipelines(ConfigReader& r, const ConfigValue& section, PipelinesConfig& pipelines) {
  if (section.node.IsNull()) return;
  if (!section.node.IsMap()) {
    r.Problem(section.mark, "pipelines must be a map from pipeline name to its settings, e.g. "
                            "{nightly: {night_starts: \"12:00\", deadline: \"06:00\"}}");
    return;
  }
  for (auto it = section.node.begin(); it != section.node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    const std::string name = key.IsScalar() ? key.Scalar() : "";
    if (absl::Status s = CheckPipelineName(name); !s.ok()) {
      r.Problem(key.Mark(), std::string(s.message()));
      continue;
    }
    if (pipelines.count(name)) {
      r.Problem(key.Mark(), absl::StrFormat("pipeline \"%s\" is set twice; the one at line %d "
                                            "has it already", name, pipelines[name].line));
      continue;
    }
    PipelineConfig& pipeline = pipelines[name];
    pipeline.line = key.Mark().line + 1;
    ParsePipeline(r, ConfigValue{value, value.IsNull() ? key.Mark() : value.Mark(),
                                 absl::StrFormat("pipelines.%s", name)},
                  pipeline);
  }
}

}  // namespace stagewatch::config_internal
