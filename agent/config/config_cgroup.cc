// The `cgroup:` section: how cgroups are learned and cached.
#include <limits>

#include "config/config_sections.h"

namespace stagewatch::config_internal {
namespace {

// The agent used to accept cgroup.root but never read it: every reader takes the mount
// points from /proc/self/mountinfo, so a configured root could only disagree with them.
void RejectCgroupRoot(ConfigReader& r, const ConfigValue& v) {
  r.Problem(v.mark, "cgroup.root is not supported: stagewatch finds every cgroup filesystem in "
                    "/proc/self/mountinfo, wherever it is mounted; delete the key (in a "
                    "container, mount the host's /sys/fs/cgroup into it, as "
                    "deploy/kubernetes/daemonset.yaml does)");
}

}  // namespace

void ParseCgroup(ConfigReader& r, const ConfigValue& section, CgroupConfig& cgroup) {
  r.ParseMap(section, " in cgroup", {
      {.key = "root",
       .handle = [&](const ConfigValue& v) { RejectCgroupRoot(r, v); },
       .listed = false},
      {"rescan_min_interval",
       [&](const ConfigValue& v) { r.ReadDuration(v, cgroup.rescan_min_interval); }},
      {"cache_max_entries", [&](const ConfigValue& v) {
         r.ReadInt(v, 16, std::numeric_limits<int>::max(), cgroup.cache_max_entries);
       }},
      {"lifecycle_events", [&](const ConfigValue& v) { r.ReadBool(v, cgroup.lifecycle_events); }},
  });
}

}  // namespace stagewatch::config_internal
