#include "exporters/metrics/placement_memory_series.h"

#include "gtest/gtest.h"
#include "metric_values.h"

namespace stagewatch::exporters {
namespace {

using ::stagewatch::testing::ValueOf;

constexpr uint64_t kMiB = 1 << 20;

class PlacementMemorySeriesTest : public ::testing::Test {
 protected:
  PlacementMemorySeriesTest() {
    auto host = std::make_shared<NumaTopology>();
    host->node_cpus = {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}};
    host->online_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
    host->memory_nodes = {0, 1};
    snapshot_.numa_topology = host;
  }
  Stage AddStage(StageId id, const std::string& name, std::vector<int> cpus,
                 std::vector<int> mems, std::optional<NumaMemory> numa = std::nullopt) {
    snapshot_.placement[id] = std::make_shared<const StagePlacement>(
        StagePlacement{.numa = std::move(numa), .cpus = cpus, .mems = mems});
    return {id, name, ""};
  }
  std::vector<prometheus::MetricFamily> Build(const std::vector<Stage>& stages,
                                              const StageNodeCpuSeconds* cpu = nullptr) {
    std::vector<prometheus::MetricFamily> out;
    AppendPlacementMemorySeries(snapshot_, stages, cpu, &out);
    return out;
  }
  static size_t SeriesOf(const std::vector<prometheus::MetricFamily>& families,
                         const std::string& name) {
    for (const auto& f : families) {
      if (f.name == name) return f.metric.size();
    }
    return 0;
  }

  Snapshot snapshot_;
};

TEST_F(PlacementMemorySeriesTest, BytesPerNodeAndTheRemoteShare) {
  const Stage train = AddStage(1, "train", {0, 1, 2, 3}, {1},
                               NumaMemory{{0, {10 * kMiB, 0}}, {1, {80 * kMiB, 10 * kMiB}}});
  const StageNodeCpuSeconds cpu = {{1, {30.0, 0.0}}};  // all on node 0, its memory 90% on 1
  const auto families = Build({train}, &cpu);
  EXPECT_EQ(ValueOf(families, "stagewatch_memory_numa_bytes",
                    {{"pipeline_stage", "train"}, {"numa_node", "1"}, {"type", "anon"}}),
            80.0 * kMiB);
  EXPECT_EQ(ValueOf(families, "stagewatch_memory_numa_bytes",
                    {{"pipeline_stage", "train"}, {"numa_node", "1"}, {"type", "file"}}),
            10.0 * kMiB);
  EXPECT_EQ(ValueOf(families, "stagewatch_memory_numa_bytes",
                    {{"pipeline_stage", "train"}, {"numa_node", "0"}, {"type", "file"}}),
            0);
  EXPECT_NEAR(ValueOf(families, "stagewatch_memory_remote_ratio", {{"pipeline_stage", "train"}}),
              0.9, 1e-12);
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_cpus", {{"pipeline_stage", "train"}}), 4);
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_info",
                    {{"pipeline_stage", "train"}, {"cpus", "0-3"}, {"mems", "1"}}),
            1);
}

TEST_F(PlacementMemorySeriesTest, NoRatioWithoutCpuTimeOrMemoryFigures) {
  const Stage a = AddStage(1, "a", {0}, {0}, NumaMemory{{0, {kMiB, 0}}});
  const Stage b = AddStage(2, "b", {1}, {0});  // no memory.numa_stat (no CONFIG_NUMA)
  const StageNodeCpuSeconds cpu = {{2, {3.0}}};
  auto families = Build({a, b}, &cpu);
  EXPECT_EQ(SeriesOf(families, "stagewatch_memory_remote_ratio"), 0u);
  EXPECT_EQ(SeriesOf(families, "stagewatch_memory_numa_bytes"), 2u);  // a's node 0, anon, file
  families = Build({a, b});  // the sched side not wired: no ratio, the rest as ever
  EXPECT_EQ(SeriesOf(families, "stagewatch_memory_remote_ratio"), 0u);
  EXPECT_EQ(SeriesOf(families, "stagewatch_cpuset_cpus"), 2u);
}

TEST_F(PlacementMemorySeriesTest, SharedCpusOnlyBetweenPinnedStagesThatOverlap) {
  const Stage train = AddStage(1, "train", {0, 1, 2, 3}, {0});
  const Stage validate = AddStage(2, "validate", {3, 4}, {0, 1});  // shares CPU 3 with train
  const Stage serve = AddStage(3, "serve", {6, 7}, {1});           // pinned apart
  const Stage batch = AddStage(4, "batch", {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1});  // the whole host
  const auto families = Build({train, validate, serve, batch});
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_shared_cpus",
                    {{"pipeline_stage", "train"}, {"other_stage", "validate"}}),
            1);
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_shared_cpus",
                    {{"pipeline_stage", "validate"}, {"other_stage", "train"}}),
            1);
  // Only those two: serve overlaps no one, batch is not pinned.
  EXPECT_EQ(SeriesOf(families, "stagewatch_cpuset_shared_cpus"), 2u);
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_cpus", {{"pipeline_stage", "batch"}}), 8);
}

TEST_F(PlacementMemorySeriesTest, SharedCpusAreBoundedPerStage) {
  std::vector<Stage> stages;
  for (int i = 0; i < 40; i++) {
    // Every stage on CPU 0, and stage i also on CPU 1 + i % 3: overlaps of 1 or 2.
    stages.push_back(AddStage(StageId(i + 1), "s" + std::to_string(i), {0, 1 + i % 3}, {0}));
  }
  const auto families = Build(stages);
  EXPECT_EQ(SeriesOf(families, "stagewatch_cpuset_shared_cpus"),
            stages.size() * kMaxSharedStagesPerStage);
  // Those it shares most with come first: s0 shares 2 CPUs with s3, s6, ...
  EXPECT_EQ(ValueOf(families, "stagewatch_cpuset_shared_cpus",
                    {{"pipeline_stage", "s0"}, {"other_stage", "s3"}}),
            2);
}

}  // namespace
}  // namespace stagewatch::exporters
