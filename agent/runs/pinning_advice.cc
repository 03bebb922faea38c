#include "runs/pinning_advice.h"

#include "absl/strings/str_format.h"
#include "cgroup/cpu_list.h"
#include "runs/run_placement.h"

namespace stagewatch {

std::optional<PinningAdvice> AdvisePinning(const std::string& stage,
                                           const std::vector<RunRecord>& runs,
                                           const NumaTopology& topology) {
  std::map<int, double> cpu_seconds;
  NumaMemory memory;
  for (const RunRecord& r : runs) {
    if (!r.end) continue;
    for (const auto& [node, seconds] : r.agent.cpu_seconds_by_node) cpu_seconds[node] += seconds;
    for (const auto& [node, m] : r.end->facts.memory_by_node) {
      memory[node].anon_bytes += m.anon_bytes;
      memory[node].file_bytes += m.file_bytes;
    }
  }
  const std::optional<MainNode> cpu = MainCpuNode(cpu_seconds);
  const std::optional<MainNode> mem = MainMemoryNode(memory);
  if (!cpu || !mem) return std::nullopt;
  const bool placed_well = cpu->share >= kMostlyOnOneNode && mem->share >= kMostlyOnOneNode &&
                           cpu->node == mem->node;
  auto cpus = topology.node_cpus.find(cpu->node);
  if (placed_well || cpus == topology.node_cpus.end() || cpus->second.empty()) {
    return std::nullopt;
  }
  PinningAdvice a{.cpu_node = cpu->node, .cpu_share = cpu->share, .memory_node = mem->node,
                  .memory_share = mem->share, .cpuset_cpus = FormatCpuList(cpus->second),
                  .cpuset_mems = absl::StrFormat("%d", cpu->node)};
  a.text = absl::StrFormat(
      "%s: %.0f%% of its CPU time on node %d, %.0f%% of its memory on node %d; pin with "
      "`--cpuset-cpus %s --cpuset-mems %s`",
      stage, cpu->share * 100, cpu->node, mem->share * 100, mem->node, a.cpuset_cpus,
      a.cpuset_mems);
  return a;
}

}  // namespace stagewatch
