#include "runs/run_placement.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cgroup/remote_memory_share.h"
#include "units.h"

namespace stagewatch {

std::optional<double> RunRemoteMemoryShare(const RunRecord& r) {
  if (!r.end || r.end->facts.memory_by_node.empty() || r.agent.cpu_seconds_by_node.empty()) {
    return std::nullopt;
  }
  std::vector<double> by_node;  // indexed by node id
  for (const auto& [node, seconds] : r.agent.cpu_seconds_by_node) {
    if (node < 0) continue;
    if (by_node.size() <= size_t(node)) by_node.resize(node + 1);
    by_node[node] = seconds;
  }
  return RemoteMemoryShare(r.end->facts.memory_by_node, by_node);
}

namespace {

template <typename Map, typename Amount>
std::optional<MainNode> MainOf(const Map& by_node, Amount amount) {
  double total = 0;
  std::optional<MainNode> main;
  double most = -1;
  for (const auto& [node, v] : by_node) {
    const double a = amount(v);
    total += a;
    if (a > most) {
      most = a;
      main = MainNode{node, 0};
    }
  }
  if (!main || total <= 0) return std::nullopt;
  main->share = most / total;
  return main;
}

double MemoryOf(const NumaNodeMemory& m) { return double(m.anon_bytes + m.file_bytes); }

template <typename Map, typename Amount, typename Format>
std::string ByNodeText(const Map& by_node, Amount amount, Format format) {
  double total = 0;
  for (const auto& [node, v] : by_node) total += amount(v);
  std::vector<std::string> parts;
  for (const auto& [node, v] : by_node) {
    parts.push_back(absl::StrFormat("node %d %s (%.0f%%)", node, format(v),
                                    total > 0 ? 100 * amount(v) / total : 0.0));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::optional<MainNode> MainCpuNode(const std::map<int, double>& cpu_seconds_by_node) {
  return MainOf(cpu_seconds_by_node, [](double s) { return s; });
}

std::optional<MainNode> MainMemoryNode(const NumaMemory& memory) {
  return MainOf(memory, MemoryOf);
}

std::string CpuByNodeText(const std::map<int, double>& cpu_seconds_by_node) {
  return ByNodeText(cpu_seconds_by_node, [](double s) { return s; },
                    [](double s) { return FormatSeconds(s); });
}

std::string MemoryByNodeText(const NumaMemory& memory) {
  return ByNodeText(memory, MemoryOf, [](const NumaNodeMemory& m) {
    return FormatBytes(m.anon_bytes + m.file_bytes);
  });
}

}  // namespace stagewatch
