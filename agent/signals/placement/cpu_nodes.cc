#include "signals/placement/cpu_nodes.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// The number N of a "nodeN" directory entry, or false for any other entry.
bool NodeNumber(const char* name, uint64_t& node) {
  const std::string_view entry(name);
  return entry.starts_with("node") && ParseDigits(entry.substr(4), node);
}

}  // namespace

absl::StatusOr<std::vector<std::pair<uint32_t, uint32_t>>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (std::string_view part : SplitNonEmpty(text, ',')) {
    const size_t dash = part.find('-');
    uint64_t first = 0, last = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseDigits(part, first) && ParseDigits(part, last)
                        : ParseDigits(part.substr(0, dash), first) &&
                              ParseDigits(part.substr(dash + 1), last);
    if (!ok || first > last || last > UINT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", ToAbsl(text), "\" is not a CPU list (such as 0-3,8): at \"", ToAbsl(part), "\""));
    }
    ranges.emplace_back(first, last);
  }
  return ranges;
}

absl::StatusOr<CpuNodes> ReadCpuNodes(int cpus, const std::string& node_dir) {
  CpuNodes out;
  out.column_of_cpu.assign(std::max(cpus, 0), 0);
  DIR* dir = opendir(node_dir.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return out;  // no NUMA: one node
    return absl::FailedPreconditionError(
        absl::StrCat("reading ", node_dir, ": ", strerror(errno)));
  }
  std::map<uint32_t, std::string> lists;  // node → its cpulist, by node number
  while (dirent* entry = readdir(dir)) {
    uint64_t node = 0;
    if (!NodeNumber(entry->d_name, node) || node > UINT32_MAX) continue;
    const std::string path = absl::StrCat(node_dir, "/", entry->d_name, "/cpulist");
    std::ifstream file(path);
    if (!file.is_open()) {
      closedir(dir);
      return absl::FailedPreconditionError(absl::StrCat("reading ", path, ": ", strerror(errno)));
    }
    std::string list;
    std::getline(file, list);  // one line; a node without CPUs has an empty one
    lists[static_cast<uint32_t>(node)] = list;
  }
  closedir(dir);
  if (lists.empty()) return out;
  out.nodes.clear();
  for (const auto& [node, list] : lists) {
    const uint32_t column = out.nodes.size();
    out.nodes.push_back(node);
    absl::StatusOr<std::vector<std::pair<uint32_t, uint32_t>>> ranges = ParseCpuList(list);
    if (!ranges.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          node_dir, "/node", node, "/cpulist: ", ranges.status().message()));
    }
    for (const auto& [first, last] : *ranges) {
      for (uint64_t cpu = first; cpu <= last && cpu < out.column_of_cpu.size(); cpu++) {
        out.column_of_cpu[cpu] = column;
      }
    }
  }
  return out;
}

}  // namespace stagewatch
