// The `stages:` section: each stage's name, pipeline and the cgroups it owns.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/config_sections.h"
#include "config/config_validate.h"

namespace stagewatch::config_internal {
namespace {

bool ReadStageName(ConfigReader& r, const ConfigValue& v, std::string& out,
                   const std::vector<StageConfig>& earlier) {
  if (!r.ReadString(v, out)) return false;
  absl::Status problem = CheckStageName(out);
  for (const StageConfig& other : earlier) {
    if (problem.ok() && other.name == out) {
      problem = absl::InvalidArgumentError(absl::StrFormat(
          "duplicate stage name \"%s\"; the stage at line %d has it already", out, other.line));
    }
  }
  if (problem.ok()) return true;
  r.Problem(v.mark, std::string(problem.message()));
  return false;
}

// Returns whether the stage has a valid, unique name (its other errors are recorded).
bool ParseStage(ConfigReader& r, const ConfigValue& v, StageConfig& stage,
                const std::vector<StageConfig>& earlier) {
  if (!v.node.IsMap()) {
    r.Problem(v.mark, absl::StrFormat("%s must be a map with name, pipeline, cgroup_paths and "
                                      "systemd_units", v.name));
    return false;
  }
  const YAML::Node name_node = v.node["name"];  // invalid (not just null) when absent
  const std::string label = name_node.IsDefined() && name_node.IsScalar() &&
                                    !name_node.Scalar().empty()
                                ? absl::StrFormat("stage \"%s\"", name_node.Scalar())
                                : v.name;
  bool name_seen = false, name_ok = false, has_matcher = false;
  // A non-empty list, or one of the wrong type (reported already), counts as a matcher.
  auto note_matcher = [&](const ConfigValue& n) {
    has_matcher |= !n.node.IsNull() && !(n.node.IsSequence() && n.node.size() == 0);
  };
  auto in_stage = [&](auto check) {
    return [check, &label](std::string_view glob) { return check(glob, label); };
  };
  r.ParseMap(v, absl::StrCat(" in ", label), {
      {"name", [&](const ConfigValue& n) {
         name_seen = true;
         name_ok = ReadStageName(r, n, stage.name, earlier);
       }},
      {"pipeline", [&](const ConfigValue& n) { r.ReadString(n, stage.pipeline); }},
      {"cgroup_paths", [&](const ConfigValue& n) {
         note_matcher(n);
         r.ReadStringList(n, stage.cgroup_paths, in_stage(CheckCgroupPathGlob));
       }},
      {"systemd_units", [&](const ConfigValue& n) {
         note_matcher(n);
         r.ReadStringList(n, stage.systemd_units, in_stage(CheckSystemdUnitGlob));
       }},
  });
  if (!name_seen) {
    r.Problem(v.mark, absl::StrFormat("%s has no name; add \"name: <stage>\"", v.name));
  }
  if (!has_matcher) {
    r.Problem(v.mark, absl::StrFormat("%s has no matcher, so no cgroup would belong to it; "
                                      "give it cgroup_paths or systemd_units", label));
  }
  return name_ok;
}

}  // namespace

void ParseStages(ConfigReader& r, const ConfigValue& v, std::vector<StageConfig>& stages) {
  if (v.node.IsNull()) return;
  if (!v.node.IsSequence()) {
    r.Problem(v.mark, "stages must be a list, e.g. [{name: train, cgroup_paths: [/train]}]");
    return;
  }
  size_t index = 0;
  for (const YAML::Node& item : v.node) {
    StageConfig stage;
    stage.line = item.Mark().line + 1;
    const ConfigValue value{item, item.Mark(), absl::StrFormat("stages[%d]", index++)};
    if (ParseStage(r, value, stage, stages)) stages.push_back(std::move(stage));
  }
}

}  // namespace stagewatch::config_internal
