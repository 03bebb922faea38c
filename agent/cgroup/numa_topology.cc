#include "cgroup/numa_topology.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cpu_list.h"
#include "string_util.h"

namespace stagewatch {

int NumaTopology::NodeOfCpu(int cpu) const {
  for (const auto& [node, cpus] : node_cpus) {
    if (std::binary_search(cpus.begin(), cpus.end(), cpu)) return node;
  }
  return -1;
}

std::vector<int> NumaTopology::Nodes() const {
  std::vector<int> nodes;
  for (const auto& entry : node_cpus) nodes.push_back(entry.first);
  return nodes;
}

absl::StatusOr<NumaTopology> ReadNumaTopology(const std::string& sys_root) {
  NumaTopology t;
  absl::StatusOr<std::vector<int>> online = ReadCpuListFile(sys_root + "/cpu/online");
  if (!online.ok()) return online.status();
  t.online_cpus = *std::move(online);

  const std::string node_dir = sys_root + "/node";
  std::error_code error;
  std::filesystem::directory_iterator entries(node_dir, error);
  if (error == std::errc::no_such_file_or_directory) {
    t.node_cpus[0] = t.online_cpus;  // no CONFIG_NUMA: the host is one node
    t.memory_nodes = {0};
    return t;
  }
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot list ", node_dir, ": ", error.message()));
  }
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    uint64_t node = 0;
    if (name.rfind("node", 0) != 0 || !ParseDigits(std::string_view(name).substr(4), node) ||
        node > uint64_t(kMaxCpuListId)) {
      continue;  // has_cpu, online, possible, power, ...
    }
    absl::StatusOr<std::vector<int>> cpus = ReadCpuListFile(entry.path().string() + "/cpulist");
    if (!cpus.ok()) return cpus.status();
    t.node_cpus[int(node)] = *std::move(cpus);
  }
  if (t.node_cpus.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(node_dir, " lists no node<N> directory; is sysfs mounted whole?"));
  }
  absl::StatusOr<std::vector<int>> memory = ReadCpuListFile(node_dir + "/has_memory");
  if (absl::IsNotFound(memory.status())) {
    memory = t.Nodes();  // kernels before 2.6.35 do not say: every node
  }
  if (!memory.ok()) return memory.status();
  t.memory_nodes = *std::move(memory);
  return t;
}

}  // namespace stagewatch
