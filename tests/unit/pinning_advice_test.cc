// `stagewatch advise` on where a stage's runs ran: two-node figures made here, against a
// two-node topology (16 CPUs each).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/pinning_advice.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20;

NumaTopology TwoNodes() {
  NumaTopology t;
  for (int cpu = 0; cpu < 32; cpu++) {
    t.node_cpus[cpu / 16].push_back(cpu);
    t.online_cpus.push_back(cpu);
  }
  t.memory_nodes = {0, 1};
  return t;
}

RunRecord Placed(const std::string& id, std::map<int, double> cpu, NumaMemory memory) {
  RunRecord r = testing::WatchedRun(id, "validate", testing::At(0), 10);
  r.agent.cpu_seconds_by_node = std::move(cpu);
  r.end->facts.memory_by_node = std::move(memory);
  return r;
}

TEST(PinningAdviceTest, RunsSpreadOverNodesArePinnedWhereMostCpuTimeRan) {
  // Summed: 8.2 s of 10 on node 0; 64 MiB of 100 on node 1.
  const std::vector<RunRecord> runs = {
      Placed("a", {{0, 4}, {1, 1}}, {{0, {20 * kMiB, 0}}, {1, {30 * kMiB, 0}}}),
      Placed("b", {{0, 4.2}, {1, 0.8}}, {{0, {16 * kMiB, 0}}, {1, {30 * kMiB, 4 * kMiB}}})};
  const std::optional<PinningAdvice> a = AdvisePinning("validate", runs, TwoNodes());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->text,
            "validate: 82% of its CPU time on node 0, 64% of its memory on node 1; pin with "
            "`--cpuset-cpus 0-15 --cpuset-mems 0`");
  // Most CPU time on node 1: its CPUs, and its memory there.
  const std::optional<PinningAdvice> b = AdvisePinning(
      "train", {Placed("c", {{0, 3}, {1, 7}}, {{0, {50 * kMiB, 0}}, {1, {50 * kMiB, 0}}})},
      TwoNodes());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->cpuset_cpus, "16-31");
  EXPECT_EQ(b->cpuset_mems, "1");
}

TEST(PinningAdviceTest, RunsPlacedWellOrNotObservedGetNone) {
  // All on node 1, memory with it.
  EXPECT_FALSE(AdvisePinning(
      "validate", {Placed("a", {{1, 10}}, {{0, {2 * kMiB, 0}}, {1, {98 * kMiB, 0}}})},
      TwoNodes()));
  // CPU time on one node, memory all on the other: pinned, though each is on one node.
  EXPECT_TRUE(AdvisePinning("validate", {Placed("a", {{0, 10}}, {{1, {100 * kMiB, 0}}})},
                            TwoNodes()));
  // No figures (runs from before, or no agent): nothing to say.
  EXPECT_FALSE(AdvisePinning("validate", {testing::WatchedRun("a", "validate", testing::At(0), 10)},
                             TwoNodes()));
}

}  // namespace
}  // namespace stagewatch
