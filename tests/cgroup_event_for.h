// A cgroup lifecycle event as the cgroup BPF program sends it (bpf/lifecycle.h), for tests and
// benches that feed the agent's consumers without the kernel.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "bpf/lifecycle.h"

namespace stagewatch::testing {

inline cgroup_event CgroupEventFor(int kind, uint64_t id, const std::string& path) {
  cgroup_event e{};
  e.cgroup_id = id;
  e.kind = kind;
  std::strncpy(e.path, path.c_str(), sizeof(e.path) - 1);
  e.path_len = std::strlen(e.path);
  return e;
}

}  // namespace stagewatch::testing
