// The CPUs and memory nodes a cgroup's tasks may use: its effective cpuset (cgroup2
// cpuset.cpus.effective and cpuset.mems.effective, v1 cpuset.effective_cpus and
// cpuset.effective_mems in the cpuset hierarchy).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"
#include "cgroup/numa_topology.h"

namespace stagewatch {

struct EffectiveCpuset {
  std::vector<int> cpus;  // ascending
  std::vector<int> mems;  // NUMA node ids, ascending
  // The directory whose files said so; "" when no cgroup has the files and the host stood in.
  std::string dir;
};

// The effective cpuset of the cgroup at `cgroup_path` (a path of the keyed hierarchy): in the
// v1 cpuset hierarchy where the host mounts one, else in cgroup2. Where the cgroup has no such
// files (cgroup2 without the cpuset controller enabled for it, or no mirror of the path in the
// v1 cpuset hierarchy), its nearest ancestor's, which the kernel applies to it; where none has
// them, the whole host: `host`'s online CPUs and nodes with memory. InvalidArgument for a file
// that is not a list of ids; other read errors as `read`'s.
absl::StatusOr<EffectiveCpuset> ReadEffectiveCpuset(const CgroupLayout& layout,
                                                    std::string_view cgroup_path,
                                                    const NumaTopology& host,
                                                    CgroupFileRead read = ReadCgroupFile);

}  // namespace stagewatch
