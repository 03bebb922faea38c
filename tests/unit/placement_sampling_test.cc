// The memory sampler's placement part: each stage top's memory.numa_stat read with its
// memory.stat (when its usage moved, else every kFullReadEvery samples) and its cpuset once
// every kFullReadEvery samples, on a directory tree standing in for the hierarchy and a reader
// that counts its reads.
#include <filesystem>
#include <fstream>
#include <map>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr const char* kTrain = "/stagewatch/train";
constexpr const char* kValidate = "/stagewatch/validate";

class PlacementSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-placement-XXXXXX";
    root_ = mkdtemp(tmpl);
    for (const char* p : {kTrain, kValidate}) std::filesystem::create_directories(root_ + p);
    layout_.mode = CgroupMode::kV2;
    layout_.key = CGROUP_KEY_DEFAULT;
    usage_[kTrain] = 100 * kMiB;
    usage_[kValidate] = 50 * kMiB;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  SampleReader Reader() {
    return {
        .stats = [this](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
          MemoryCgroupStats m;
          m.usage_bytes = usage_[c.path];
          return m;
        },
        .usage = [this](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
          return usage_[c.path];
        },
        .limit = [](const std::string&) -> absl::StatusOr<std::optional<uint64_t>> {
          return std::nullopt;
        },
        .pressure = [](const NamedCgroup&, std::string_view) -> absl::StatusOr<PsiTotals> {
          return absl::NotFoundError("no PSI");
        },
        .numa = [this](const NamedCgroup& c) -> absl::StatusOr<NumaMemory> {
          numa_reads_[c.path]++;
          if (!numa_) return absl::NotFoundError(c.path + "/memory.numa_stat: no such file");
          return NumaMemory{{0, {usage_[c.path] / 4, 0}}, {1, {usage_[c.path] / 2, kMiB}}};
        },
        .cpuset = [this](const NamedCgroup& c) -> absl::StatusOr<EffectiveCpuset> {
          cpuset_reads_[c.path]++;
          if (c.path == kTrain) return EffectiveCpuset{{0, 1}, {0}, ""};
          return EffectiveCpuset{{2, 3}, {1}, ""};
        },
    };
  }

  std::string root_;
  CgroupLayout layout_;
  std::map<std::string, uint64_t> usage_;
  bool numa_ = true;
  std::map<std::string, int> numa_reads_, cpuset_reads_;
};

struct Naming {
  explicit Naming(const std::string& root) : paths(root) {}
  CgroupPathCache paths;
  StageResolver stages{{}, DiscoveryConfig{}};
  CgroupNamer namer{&paths, &stages, absl::ZeroDuration()};
};

TEST_F(PlacementSamplingTest, NumaStatWithMemoryStatAndCpusetsOnTheSlowRound) {
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader(),
                        kMemoryPart | kPlacementPart);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  sampler.SampleOnce(t0);
  const StageId train = naming.stages.Resolve(kTrain).id;
  const StageId validate = naming.stages.Resolve(kValidate).id;
  std::shared_ptr<const Snapshot> s = sampler.Latest();
  ASSERT_TRUE(s->placement.contains(train));
  const StagePlacement& p = *s->placement.at(train);
  ASSERT_TRUE(p.numa.has_value());
  EXPECT_EQ(p.numa->at(1).anon_bytes, 50 * kMiB);
  EXPECT_EQ(p.numa->at(1).file_bytes, kMiB);
  EXPECT_EQ(*p.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(*s->placement.at(validate)->mems, (std::vector<int>{1}));
  EXPECT_TRUE(s->placement_error.ok()) << s->placement_error;

  // Idle: memory.stat, and memory.numa_stat with it, once in kFullReadEvery samples; the
  // cpuset once in as many. The figures carry over between readings.
  for (uint64_t i = 1; i <= kFullReadEvery; i++) sampler.SampleOnce(t0 + absl::Seconds(i));
  EXPECT_EQ(numa_reads_[kTrain], 2);
  EXPECT_EQ(cpuset_reads_[kTrain], 2);
  EXPECT_EQ(cpuset_reads_[kValidate], 2);
  EXPECT_EQ(sampler.Latest()->placement.at(train)->numa->at(1).anon_bytes, 50 * kMiB);
  EXPECT_EQ(*sampler.Latest()->placement.at(train)->cpus, (std::vector<int>{0, 1}));

  // Memory that moved is read again in the same sample, with its memory.stat.
  usage_[kTrain] = 200 * kMiB;
  sampler.SampleOnce(t0 + absl::Seconds(20));
  EXPECT_EQ(numa_reads_[kTrain], 3);
  EXPECT_EQ(numa_reads_[kValidate], 2);
  EXPECT_EQ(sampler.Latest()->placement.at(train)->numa->at(1).anon_bytes, 100 * kMiB);
}

// With the cgroups unchanged (as the lifecycle events keep them), a stage none of whose tops
// was read again shares its placement with the last snapshot; one whose top was is summed anew.
TEST_F(PlacementSamplingTest, OnlyAStageWhoseTopWasReadAgainIsSummedAgain) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::Hours(1));  // one walk: the same cgroups after it
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader(), kMemoryPart | kPlacementPart);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  sampler.SampleOnce(t0);
  const StageId train = stages.Resolve(kTrain).id;
  const StageId validate = stages.Resolve(kValidate).id;

  // Two samples, at most one of them on a top's cpuset round (once in kFullReadEvery).
  bool validate_kept = false;
  for (uint64_t i = 1; i <= 2; i++) {
    const std::shared_ptr<const Snapshot> before = sampler.Latest();
    const int validate_cpusets = cpuset_reads_[kValidate];
    usage_[kTrain] = 100 * kMiB * i;  // moved: its memory.numa_stat is read again
    sampler.SampleOnce(t0 + absl::Seconds(i));
    const std::shared_ptr<const Snapshot> after = sampler.Latest();
    EXPECT_EQ(after->placement.at(train)->numa->at(1).anon_bytes, 50 * kMiB * i) << i;
    EXPECT_EQ(*after->placement.at(train)->cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(after->placement.at(validate)->numa->at(1).anon_bytes, 25 * kMiB);
    if (cpuset_reads_[kValidate] == validate_cpusets) {  // nothing of it read again
      EXPECT_EQ(after->placement.at(validate), before->placement.at(validate)) << i;
      validate_kept = true;
    }
  }
  EXPECT_EQ(numa_reads_[kValidate], 1);
  EXPECT_TRUE(validate_kept);
}

// Read from the files: a top without a cpuset of its own has its nearest ancestor's (shared by
// the tops in a pass), and a change there is seen by each on its next round.
TEST_F(PlacementSamplingTest, TopsWithoutACpusetOfTheirOwnHaveTheirAncestorsAsItChanges) {
  layout_.v2_root = root_;
  auto write = [this](const std::string& dir, const char* cpus, const char* mems) {
    std::ofstream(root_ + dir + "/cpuset.cpus.effective") << cpus << "\n";
    std::ofstream(root_ + dir + "/cpuset.mems.effective") << mems << "\n";
  };
  write("", "0-3", "0-1");
  write(kTrain, "0-1", "0");
  constexpr const char* kIngest = "/stagewatch/ingest";
  std::filesystem::create_directories(root_ + kIngest);
  usage_[kIngest] = 10 * kMiB;
  Naming naming(root_);
  SampleReader reader = Reader();
  reader.cpuset = nullptr;  // from the files above
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, reader,
                        kMemoryPart | kPlacementPart);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  sampler.SampleOnce(t0);
  auto cpus = [&](const char* top) {
    return *sampler.Latest()->placement.at(naming.stages.Resolve(top).id)->cpus;
  };
  EXPECT_EQ(cpus(kTrain), (std::vector<int>{0, 1}));
  EXPECT_EQ(cpus(kValidate), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpus(kIngest), (std::vector<int>{0, 1, 2, 3}));

  write("", "2-3", "1");
  for (int s = 1; s <= int(kFullReadEvery); s++) sampler.SampleOnce(t0 + absl::Seconds(s));
  EXPECT_EQ(cpus(kTrain), (std::vector<int>{0, 1}));
  EXPECT_EQ(cpus(kValidate), (std::vector<int>{2, 3}));
  EXPECT_EQ(cpus(kIngest), (std::vector<int>{2, 3}));
  EXPECT_EQ(*sampler.Latest()->placement.at(naming.stages.Resolve(kIngest).id)->mems,
            (std::vector<int>{1}));
}

TEST_F(PlacementSamplingTest, WithoutNumaStatTheCpusetsStayAndTheSnapshotSaysWhy) {
  numa_ = false;  // a kernel without CONFIG_NUMA
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader(),
                        kMemoryPart | kPlacementPart);
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  std::shared_ptr<const Snapshot> s = sampler.Latest();
  const StageId train = naming.stages.Resolve(kTrain).id;
  ASSERT_TRUE(s->placement.contains(train));
  EXPECT_FALSE(s->placement.at(train)->numa.has_value());
  EXPECT_EQ(*s->placement.at(train)->cpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(absl::IsNotFound(s->placement_error)) << s->placement_error;
  EXPECT_TRUE(s->numa_topology);  // the host's, read as the sampler started
}

TEST_F(PlacementSamplingTest, WithoutThePlacementPartNothingOfItIsRead) {
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader(), kMemoryPart);
  for (int i = 0; i < 12; i++) sampler.SampleOnce(absl::FromUnixSeconds(1000 + i));
  EXPECT_TRUE(numa_reads_.empty());
  EXPECT_TRUE(cpuset_reads_.empty());
  EXPECT_TRUE(sampler.Latest()->placement.empty());
  EXPECT_FALSE(sampler.Latest()->numa_topology);
}

}  // namespace
}  // namespace stagewatch
