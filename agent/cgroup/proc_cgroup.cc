#include "cgroup/proc_cgroup.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// The line of /proc/<pid>/cgroup text for v1 `controller` (or cgroup2 when empty), split into
// hierarchy id, controllers and path.
absl::StatusOr<std::vector<absl::string_view>> LineOf(std::string_view text,
                                                      std::string_view controller) {
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n', absl::SkipEmpty())) {
    // hierarchy-id:controller-list:path; the path itself may contain ':'.
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const bool wanted =
        controller.empty()
            ? parts[0] == "0" && parts[1].empty()
            : absl::c_linear_search(std::vector<absl::string_view>(absl::StrSplit(parts[1], ',')),
                                    ToAbsl(controller));
    if (wanted) return parts;
  }
  return absl::NotFoundError(controller.empty()
                                 ? "no cgroup v2 line (0::) in /proc/<pid>/cgroup"
                                 : absl::StrCat("no ", ToAbsl(controller),
                                                " controller line in /proc/<pid>/cgroup"));
}

std::string_view KeyedController(cgroup_key_hierarchy key) {
  return key == CGROUP_KEY_DEFAULT ? "" : "memory";
}

absl::StatusOr<std::string> ReadProcFile(const std::string& file) {
  std::ifstream in(file);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", file, ": process has exited"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::string> ParseProcCgroupOf(std::string_view text, std::string_view controller) {
  absl::StatusOr<std::vector<absl::string_view>> parts = LineOf(text, controller);
  if (!parts.ok()) return parts.status();
  return std::string((*parts)[2]);
}

absl::StatusOr<std::string> ParseProcCgroup(std::string_view text, cgroup_key_hierarchy key) {
  return ParseProcCgroupOf(text, KeyedController(key));
}

absl::StatusOr<uint32_t> ParseHierarchyId(std::string_view text, cgroup_key_hierarchy key) {
  absl::StatusOr<std::vector<absl::string_view>> parts = LineOf(text, KeyedController(key));
  if (!parts.ok()) return parts.status();
  uint32_t id = 0;
  if (!absl::SimpleAtoi((*parts)[0], &id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc/<pid>/cgroup: hierarchy id \"", (*parts)[0], "\" is not a number"));
  }
  return id;
}

absl::StatusOr<std::string> ReadOwnProcCgroupText() { return ReadProcFile("/proc/self/cgroup"); }

absl::StatusOr<uint32_t> ReadOwnHierarchyId(cgroup_key_hierarchy key) {
  absl::StatusOr<std::string> text = ReadOwnProcCgroupText();
  if (!text.ok()) return text.status();
  return ParseHierarchyId(*text, key);
}

absl::StatusOr<std::string> ReadProcCgroup(int pid, cgroup_key_hierarchy key) {
  absl::StatusOr<std::string> text = ReadProcFile(absl::StrCat("/proc/", pid, "/cgroup"));
  if (!text.ok()) return text.status();
  return ParseProcCgroup(*text, key);
}

}  // namespace stagewatch
