// Which cgroup hierarchies a host mounts, and which one the kernel side keys on.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "bpf/cgroup_key.h"

namespace stagewatch {

enum class CgroupMode { kV1, kHybrid, kV2 };
std::string_view CgroupModeName(CgroupMode mode);  // "v1" | "hybrid" | "v2"

struct CgroupLayout {
  CgroupMode mode = CgroupMode::kV2;
  // The hierarchy whose directory inode numbers are the ids in BPF maps and events.
  cgroup_key_hierarchy key = CGROUP_KEY_DEFAULT;
  std::string key_root;        // mount point of that hierarchy
  std::string v2_root;         // cgroup2 mount point, empty if none (PSI, cpu.stat)
  std::string v1_memory_root;  // v1 memory controller mount point, empty if none
  bool v2_has_memory = false;  // cgroup2 root lists the memory controller
  std::map<std::string, std::string> v1_roots;  // v1 controller → its mount point
};

// Decides the layout from /proc/self/mountinfo text. Mount points are absolute; `fs_prefix`
// is prepended when reading files below them (fixture trees in tests, "" on a real host).
// Keys on v2 when its root enables the memory controller, else on the v1 memory hierarchy,
// else on v2. Errors when no cgroup filesystem is mounted.
absl::StatusOr<CgroupLayout> DetectCgroupLayout(std::string_view mountinfo_text,
                                                std::string_view fs_prefix = "");

// The directory holding `controller`'s files ("cpu", "cpuacct", "memory", or "pressure" for
// PSI) for the cgroup at `cgroup_path` in the keyed hierarchy. On v1 and hybrid hosts this is
// the same path in that controller's hierarchy (systemd and `stagewatch run` mirror paths);
// PSI lives only in cgroup2. "" when the host has no such hierarchy.
std::string ControllerDir(const CgroupLayout& layout, std::string_view controller,
                          std::string_view cgroup_path);

// The directory of the cgroup at `cgroup_path` in the keyed hierarchy.
std::string KeyedDir(const CgroupLayout& layout, std::string_view cgroup_path);

// Reads /proc/self/mountinfo and detects the running host's layout.
absl::StatusOr<CgroupLayout> DetectHostCgroupLayout();

}  // namespace stagewatch
