// A process's cgroup, from /proc/<pid>/cgroup: for events whose BPF side knew only a pid.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"

namespace stagewatch {

// The path, within the keyed hierarchy, named by /proc/<pid>/cgroup text: the "0::" line for
// the default hierarchy, or the v1 line whose controller list includes "memory".
absl::StatusOr<std::string> ParseProcCgroup(std::string_view text, cgroup_key_hierarchy key);

absl::StatusOr<std::string> ReadProcCgroup(int pid, cgroup_key_hierarchy key);

// The text of this process's /proc/self/cgroup, for the parsers here.
absl::StatusOr<std::string> ReadOwnProcCgroupText();

// The kernel's hierarchy id (the first field of /proc/<pid>/cgroup lines) of the keyed
// hierarchy: 0 for cgroup v2, else that of the v1 memory controller's line.
absl::StatusOr<uint32_t> ParseHierarchyId(std::string_view text, cgroup_key_hierarchy key);
absl::StatusOr<uint32_t> ReadOwnHierarchyId(cgroup_key_hierarchy key);

// The path in the hierarchy of v1 `controller` ("cpu", "memory", ...), or in the cgroup2
// hierarchy when `controller` is empty. NotFound when the text has no such line.
absl::StatusOr<std::string> ParseProcCgroupOf(std::string_view text, std::string_view controller);

}  // namespace stagewatch
