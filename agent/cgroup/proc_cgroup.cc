#include "cgroup/proc_cgroup.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/algorithm/container.h"
#include "absl/strings/str_split.h"
#include "string_util.h"

namespace stagewatch {

absl::StatusOr<std::string> ParseProcCgroupOf(std::string_view text, std::string_view controller) {
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n', absl::SkipEmpty())) {
    // hierarchy-id:controller-list:path; the path itself may contain ':'.
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const bool wanted =
        controller.empty()
            ? parts[0] == "0" && parts[1].empty()
            : absl::c_linear_search(std::vector<absl::string_view>(absl::StrSplit(parts[1], ',')),
                                    ToAbsl(controller));
    if (wanted) return std::string(parts[2]);
  }
  return absl::NotFoundError(controller.empty()
                                 ? "no cgroup v2 line (0::) in /proc/<pid>/cgroup"
                                 : absl::StrCat("no ", ToAbsl(controller),
                                                " controller line in /proc/<pid>/cgroup"));
}

absl::StatusOr<std::string> ParseProcCgroup(std::string_view text, cgroup_key_hierarchy key) {
  return ParseProcCgroupOf(text, key == CGROUP_KEY_DEFAULT ? "" : "memory");
}

absl::StatusOr<std::string> ReadProcCgroup(int pid, cgroup_key_hierarchy key) {
  const std::string file = absl::StrCat("/proc/", pid, "/cgroup");
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", file, ": process has exited"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcCgroup(text.str(), key);
}

}  // namespace stagewatch
