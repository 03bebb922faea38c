// A cgroup tree of plain files in a fresh temporary directory, for the readers of a run's
// cgroup files: laid out as a v1 host (memory, and cpu with cpuacct beside it) or a cgroup2
// one, and filled a cgroup's files at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cgroup/layout.h"
#include "runs_test_util.h"

namespace stagewatch::testing {

class CgroupFileTree {
 public:
  // Keyed on the v1 memory hierarchy at memory/, cpu and cpuacct both at cpu/, no cgroup2.
  CgroupLayout V1() const {
    CgroupLayout layout;
    layout.mode = CgroupMode::kHybrid;
    layout.key = CGROUP_KEY_V1_MEMORY;
    layout.key_root = layout.v1_memory_root = dir_.file("memory");
    layout.v1_roots = {{"memory", dir_.file("memory")}, {"cpu", dir_.file("cpu")},
                       {"cpuacct", dir_.file("cpu")}};
    return layout;
  }
  // cgroup2 with the memory controller, at unified/.
  CgroupLayout V2() const {
    CgroupLayout layout;
    layout.mode = CgroupMode::kV2;
    layout.key = CGROUP_KEY_DEFAULT;
    layout.key_root = layout.v2_root = dir_.file("unified");
    layout.v2_has_memory = true;
    return layout;
  }

  // Writes each file (name → contents) of the cgroup at `cgroup_path` in `hierarchy`
  // ("memory", "cpu" or "unified"), making its directory.
  void Write(const std::string& hierarchy, const std::string& cgroup_path,
             const std::map<std::string, std::string>& files) const {
    const std::string dir = dir_.file(hierarchy) + cgroup_path;
    std::filesystem::create_directories(dir);
    for (const auto& [name, text] : files) std::ofstream(dir + "/" + name) << text;
  }

  // Removes one file of the cgroup at `cgroup_path` in `hierarchy`.
  void Remove(const std::string& hierarchy, const std::string& cgroup_path,
              const std::string& name) const {
    std::filesystem::remove(dir_.file(hierarchy) + cgroup_path + "/" + name);
  }

  // A v1 run's memory files, as the sampler reads them: usage, limit, peak and failcnt.
  void V1Memory(const std::string& cgroup_path, uint64_t usage, uint64_t limit, uint64_t peak,
                uint64_t failcnt = 3) const {
    auto line = [](uint64_t v) { return std::to_string(v) + "\n"; };
    Write("memory", cgroup_path,
          {{"memory.usage_in_bytes", line(usage)}, {"memory.limit_in_bytes", line(limit)},
           {"memory.max_usage_in_bytes", line(peak)}, {"memory.failcnt", line(failcnt)}});
  }

 private:
  TempDir dir_;
};

}  // namespace stagewatch::testing
