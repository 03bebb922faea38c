#include "cgroup/cpu_list.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_tree.h"
#include "string_util.h"

namespace stagewatch {
namespace {

bool ParseId(std::string_view text, int& id) {
  uint64_t v = 0;
  if (!ParseDigits(text, v) || v > uint64_t(kMaxCpuListId)) return false;
  id = int(v);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text, std::string_view file) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(ToAbsl(text));
  std::vector<int> ids;
  if (trimmed.empty()) return ids;
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(file), ": \"", absl::CEscape(ToAbsl(text)),
                     "\" is not a list of CPUs or nodes such as \"0-3,8,10-11\""));
  };
  // Split by hand: SplitNonEmpty would let ",," and a trailing comma through.
  std::string_view rest(trimmed.data(), trimmed.size());
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view range = rest.substr(0, comma);
    const size_t dash = range.find('-');
    int first = 0, last = 0;
    if (!ParseId(range.substr(0, dash), first) ||
        !ParseId(dash == std::string_view::npos ? range : range.substr(dash + 1), last) ||
        last < first) {
      return bad();
    }
    for (int id = first; id <= last; id++) ids.push_back(id);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
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
