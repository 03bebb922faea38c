#include "cgroup/cpu_list.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cgroup/cgroup_tree.h"
#include "string_util.h"

namespace stagewatch {
namespace {

absl::Status Bad(std::string why) { return absl::InvalidArgumentError(std::move(why)); }

absl::Status ParseId(absl::string_view text, int& id) {
  uint64_t v = 0;
  if (!ParseDigits(std::string_view(text.data(), text.size()), v) ||
      v > uint64_t(kMaxCpuListId)) {
    return Bad(absl::StrCat("\"", text, "\" is not a number from 0 to ", kMaxCpuListId));
  }
  id = int(v);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuListIds(std::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(ToAbsl(text));
  std::vector<int> ids;
  if (trimmed.empty()) return ids;
  // absl::StrSplit keeps empty items, so ",," and a trailing comma are told, not skipped.
  for (absl::string_view item : absl::StrSplit(trimmed, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) return Bad("it has an empty item");
    const size_t dash = item.find('-');
    int first = 0, last = 0;
    if (absl::Status s = ParseId(item.substr(0, dash), first); !s.ok()) return s;
    last = first;
    if (dash != absl::string_view::npos) {
      const absl::string_view end = item.substr(dash + 1);
      if (end.empty()) return Bad(absl::StrCat("the range \"", item, "\" has no end"));
      if (absl::Status s = ParseId(end, last); !s.ok()) return s;
      if (last < first) return Bad(absl::StrCat("the range \"", item, "\" runs backwards"));
    }
    for (int id = first; id <= last; id++) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text, std::string_view file) {
  absl::StatusOr<std::vector<int>> ids = ParseCpuListIds(text);
  if (ids.ok()) return ids;
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(file), ": \"", absl::CEscape(ToAbsl(text)),
                   "\" is not a list of CPUs or nodes such as \"0-3,8,10-11\": ",
                   ids.status().message()));
}

std::string FormatCpuList(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) j++;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, ids[i]);
    if (j > i) absl::StrAppend(&out, "-", ids[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadCgroupFile(path);
  if (!text.ok()) return text.status();
  return ParseCpuList(*text, path);
}

}  // namespace stagewatch
