// Ids for the files of many cgroups, each cgroup's own path taken out of its files' paths:
// `/sys/fs/cgroup/memory` + a run's path + `/memory.usage_in_bytes` is one id for every run.
// A discovered run then keeps a small number for each file it reads, rather than its path
// (twice, as a key and in the file: about 4 KiB a run at 10,000 runs, issue #29's RSS).
// Bounded by the hierarchies' roots times the file names the readers ask for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace stagewatch {

// Not thread-safe: one thread's readers (OpenCgroupFiles holds the one they share).
class CgroupFileIds {
 public:
  // The id of `path`, a file directly in the directory of the cgroup at `cgroup_path` (in any
  // hierarchy): nullopt when it is not, or once kMaxIds ids are given (the caller then reads
  // the file keeping nothing of it).
  std::optional<uint32_t> Of(std::string_view path, std::string_view cgroup_path);

  size_t size() const { return ids_.size(); }
  static constexpr size_t kMaxIds = 4096;

 private:
  absl::flat_hash_map<std::string, uint32_t> ids_;  // "root\nname" → id
};

}  // namespace stagewatch
