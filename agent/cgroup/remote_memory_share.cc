#include "cgroup/remote_memory_share.h"

#include <algorithm>

namespace stagewatch {
namespace {

double Seconds(double s) { return s > 0 ? s : 0; }  // NaN and negatives count 0

}  // namespace

std::optional<double> RemoteMemoryShare(const NumaMemory& memory,
                                        const std::vector<double>& cpu_seconds_by_node) {
  double total_memory = 0;
  for (const auto& [node, m] : memory) total_memory += double(m.anon_bytes + m.file_bytes);
  double total_cpu = 0;
  for (double s : cpu_seconds_by_node) total_cpu += Seconds(s);
  if (total_memory <= 0 || total_cpu <= 0) return std::nullopt;
  double remote = 0;
  for (size_t node = 0; node < cpu_seconds_by_node.size(); node++) {
    const double seconds = Seconds(cpu_seconds_by_node[node]);
    if (seconds == 0) continue;
    auto m = memory.find(int(node));
    const double local =
        m == memory.end() ? 0 : double(m->second.anon_bytes + m->second.file_bytes);
    remote += seconds / total_cpu * (1 - local / total_memory);
  }
  return std::clamp(remote, 0.0, 1.0);  // rounding only
}

}  // namespace stagewatch
