// Quiet cgroups are not read: the gate over the sched tracker's counters, and the memory
// sampler (a stage none of whose cgroups ran keeps its last read, an active one is read every
// sample, the floor reads a quiet one anyway). The run sampler's: discovered_sampler_test.cc.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "memory/memory_sampler.h"
#include "sched/cgroup_activity.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1 << 20;
const absl::Time kT0 = absl::FromUnixSeconds(1000);

std::shared_ptr<const ActivityLook> Look(std::map<uint64_t, uint64_t> counters,
                                         std::set<uint64_t> running = {}, uint64_t refused = 0) {
  auto look = std::make_shared<ActivityLook>();
  for (const auto& [id, n] : counters) look->counters[id] = n;
  look->running.insert(running.begin(), running.end());
  look->refused = refused;
  return look;
}

TEST(ActivityGateTest, DueWhenACgroupRanRunsOrTheFloorPassed) {
  ActivityGate gate(absl::Seconds(30));
  const std::vector<uint64_t> ids = {7, 8};
  auto idle = Look({{7, 100}, {9, 5}});
  EXPECT_TRUE(gate.Due(1, ids, idle.get(), kT0)) << "never read";
  EXPECT_FALSE(gate.Due(1, ids, idle.get(), kT0 + absl::Seconds(1)));
  // Another key's cgroup ran: not this one's business.
  EXPECT_FALSE(gate.Due(1, ids, Look({{7, 100}, {9, 6}}).get(), kT0 + absl::Seconds(2)));
  // Its cgroup 8 ran for the first time (an entry appears).
  EXPECT_TRUE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}).get(), kT0 + absl::Seconds(3)));
  EXPECT_FALSE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}).get(), kT0 + absl::Seconds(4)));
  // On a CPU now, no switch yet.
  EXPECT_TRUE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}, {7}).get(), kT0 + absl::Seconds(5)));
  // Refused counts: anyone may have run.
  EXPECT_TRUE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}, {}, 1).get(), kT0 + absl::Seconds(6)));
  EXPECT_FALSE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}, {}, 1).get(), kT0 + absl::Seconds(7)));
  // Quiet for the floor: read anyway.
  EXPECT_FALSE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}, {}, 1).get(), kT0 + absl::Seconds(35)));
  EXPECT_TRUE(gate.Due(1, ids, Look({{7, 100}, {8, 1}}, {}, 1).get(), kT0 + absl::Seconds(36)));
  // No look (the probe is off): every time.
  EXPECT_TRUE(gate.Due(1, ids, nullptr, kT0 + absl::Seconds(37)));
  EXPECT_TRUE(gate.Due(1, ids, nullptr, kT0 + absl::Seconds(38)));
}

// A stage with two cgroups on a directory tree, a reader that counts its reads, and the
// activity look the test sets.
class QuietStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-quiet-XXXXXX";
    root_ = mkdtemp(tmpl);
    for (const char* p : {kTop, kRun}) fs::create_directories(root_ + p);
    layout_.mode = CgroupMode::kHybrid;
    layout_.key = CGROUP_KEY_V1_MEMORY;
    top_id_ = Inode(kTop);
    run_id_ = Inode(kRun);
    usage_ = 100 * kMiB;
  }
  void TearDown() override { fs::remove_all(root_); }

  uint64_t Inode(const char* path) {
    struct stat st {};
    EXPECT_EQ(stat((root_ + path).c_str(), &st), 0);
    return st.st_ino;
  }

  SampleReader Reader() {
    return {
        .stats = [this](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
          stats_reads_++;
          return MemoryCgroupStats{.usage_bytes = usage_, .working_set_bytes = usage_};
        },
        .limit = [](const std::string&) -> absl::StatusOr<std::optional<uint64_t>> {
          return std::nullopt;
        },
        .pressure = [this](const NamedCgroup&, std::string_view) -> absl::StatusOr<PsiTotals> {
          pressure_reads_++;
          return PsiTotals{.some_us = 1000, .full_us = 10};
        },
        .cpu = [this](const NamedCgroup&) -> absl::StatusOr<CpuCgroupStats> {
          cpu_reads_++;
          return CpuCgroupStats{.usage_ns = usage_};
        },
    };
  }

  uint64_t Usage(MemorySampler& sampler, StageId stage) {
    return sampler.Latest()->memory.at(stage).usage_bytes;
  }

  static constexpr const char* kTop = "/stagewatch/quietstage";
  static constexpr const char* kRun = "/stagewatch/quietstage/job";
  std::string root_;
  CgroupLayout layout_;
  uint64_t top_id_ = 0, run_id_ = 0, usage_ = 0;
  int stats_reads_ = 0, pressure_reads_ = 0, cpu_reads_ = 0;
  std::shared_ptr<const ActivityLook> look_;
};

TEST_F(QuietStageTest, AQuietStageKeepsItsReadAnActiveOneIsReadEverySample) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader());
  sampler.SetActivity([this] { return look_; });
  const StageId stage = stages.Resolve(kTop).id;

  look_ = Look({{run_id_, 50}});
  sampler.SampleOnce(kT0);
  EXPECT_EQ(stats_reads_, 1);
  EXPECT_EQ(pressure_reads_, 3);  // memory, io, cpu
  EXPECT_EQ(cpu_reads_, 1);
  EXPECT_EQ(Usage(sampler, stage), 100 * kMiB);

  // Nothing ran: the sample repeats the last read, and reads no file.
  usage_ = 300 * kMiB;  // (an uncharge from outside task context, say)
  for (int s = 1; s <= 5; s++) sampler.SampleOnce(kT0 + absl::Seconds(s));
  EXPECT_EQ(stats_reads_, 1);
  EXPECT_EQ(pressure_reads_, 3);
  EXPECT_EQ(cpu_reads_, 1);
  EXPECT_EQ(Usage(sampler, stage), 100 * kMiB);
  EXPECT_EQ(sampler.Latest()->memory.at(stage).sampled_at, kT0 + absl::Seconds(5))
      << "a kept read is this sample's, for the detectors";

  // Its job runs: read on every sample it runs in.
  for (int s = 6; s <= 8; s++) {
    look_ = Look({{run_id_, uint64_t(50 + s)}});
    sampler.SampleOnce(kT0 + absl::Seconds(s));
  }
  EXPECT_EQ(stats_reads_, 4);
  EXPECT_EQ(cpu_reads_, 4);
  EXPECT_EQ(Usage(sampler, stage), 300 * kMiB);

  // On a CPU without a switch since the last look: read.
  usage_ = 310 * kMiB;
  look_ = Look({{run_id_, 58}}, {top_id_});
  sampler.SampleOnce(kT0 + absl::Seconds(9));
  EXPECT_EQ(stats_reads_, 5);
  EXPECT_EQ(Usage(sampler, stage), 310 * kMiB);

  // Quiet again; the floor reads it 30 s after its last read.
  look_ = Look({{run_id_, 58}});
  usage_ = 50 * kMiB;
  sampler.SampleOnce(kT0 + absl::Seconds(38));
  EXPECT_EQ(stats_reads_, 5);
  sampler.SampleOnce(kT0 + absl::Seconds(39));
  EXPECT_EQ(stats_reads_, 6);
  EXPECT_EQ(Usage(sampler, stage), 50 * kMiB);
}

TEST_F(QuietStageTest, WithoutALookEverySampleReads) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader());
  sampler.SetActivity([] { return nullptr; });  // the tracker has not collected yet
  for (int s = 0; s < 3; s++) sampler.SampleOnce(kT0 + absl::Seconds(s));
  EXPECT_EQ(stats_reads_, 3);
  EXPECT_EQ(cpu_reads_, 3);
}

}  // namespace
}  // namespace stagewatch
