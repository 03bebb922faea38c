#include "cgroup/memcg_counters.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_tree.h"

namespace stagewatch {
namespace {

absl::StatusOr<uint64_t> ReadKey(const std::string& file, std::string_view key) {
  absl::StatusOr<std::string> contents = ReadCgroupFile(file);
  if (!contents.ok()) return contents.status();
  return ParseFlatKeyedValue(*contents, key, file);
}

}  // namespace

absl::StatusOr<uint64_t> ReadOomKillCount(const std::string& cgroup_dir, cgroup_key_hierarchy key) {
  if (key == CGROUP_KEY_V1_MEMORY) {
    return ReadKey(absl::StrCat(cgroup_dir, "/memory.oom_control"), "oom_kill");
  }
  const std::string local = absl::StrCat(cgroup_dir, "/memory.events.local");
  absl::StatusOr<std::string> contents = ReadCgroupFile(local);
  // Fall back only when the file is absent (kernels before 5.2); a broken file is an error.
  if (absl::IsNotFound(contents.status())) {
    return ReadKey(absl::StrCat(cgroup_dir, "/memory.events"), "oom_kill");
  }
  if (!contents.ok()) return contents.status();
  return ParseFlatKeyedValue(*contents, "oom_kill", local);
}

}  // namespace stagewatch
