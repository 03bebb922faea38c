#include "cgroup/proc_cgroup.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/algorithm/container.h"
#include "absl/strings/str_split.h"
#include "string_util.h"

namespace stagewatch {

namespace {

// The keyed hierarchy's line of /proc/<pid>/cgroup text, split into id, controllers, path.
absl::StatusOr<std::vector<absl::string_view>> KeyedLine(std::string_view text,
                                                         cgroup_key_hierarchy key) {
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n', absl::SkipEmpty())) {
    // hierarchy-id:controller-list:path; the path itself may contain ':'.
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const bool wanted =
        key == CGROUP_KEY_DEFAULT
            ? parts[0] == "0" && parts[1].empty()
            : absl::c_linear_search(std::vector<absl::string_view>(absl::StrSplit(parts[1], ',')),
                                    "memory");
    if (wanted) return parts;
  }
  return absl::NotFoundError(key == CGROUP_KEY_DEFAULT
                                 ? "no cgroup v2 line (0::) in /proc/<pid>/cgroup"
                                 : "no memory controller line in /proc/<pid>/cgroup");
}

absl::StatusOr<std::string> ReadProcFile(const std::string& file) {
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", file, ": process has exited"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::string> ParseProcCgroup(std::string_view text, cgroup_key_hierarchy key) {
  absl::StatusOr<std::vector<absl::string_view>> parts = KeyedLine(text, key);
  if (!parts.ok()) return parts.status();
  return std::string((*parts)[2]);
}

absl::StatusOr<uint32_t> ParseHierarchyId(std::string_view text, cgroup_key_hierarchy key) {
  absl::StatusOr<std::vector<absl::string_view>> parts = KeyedLine(text, key);
  if (!parts.ok()) return parts.status();
  uint32_t id = 0;
  if (!absl::SimpleAtoi((*parts)[0], &id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc/<pid>/cgroup: hierarchy id \"", (*parts)[0], "\" is not a number"));
  }
  return id;
}

absl::StatusOr<uint32_t> ReadOwnHierarchyId(cgroup_key_hierarchy key) {
  absl::StatusOr<std::string> text = ReadProcFile("/proc/self/cgroup");
  if (!text.ok()) return text.status();
  return ParseHierarchyId(*text, key);
}

absl::StatusOr<std::string> ReadProcCgroup(int pid, cgroup_key_hierarchy key) {
  absl::StatusOr<std::string> text = ReadProcFile(absl::StrCat("/proc/", pid, "/cgroup"));
  if (!text.ok()) return text.status();
  return ParseProcCgroup(*text, key);
}

}  // namespace stagewatch
