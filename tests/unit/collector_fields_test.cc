// Each exported series fed its own field: the oom collector's kinds and the sign of its
// mismatch gauge, and the memory collector's four PSI series, on directory trees standing in
// for a v1 memory hierarchy and a cgroup2 one, with figures that differ from each other.
#include <sys/stat.h>
#include <time.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "exporters/metrics/memory_collector.h"
#include "exporters/metrics/oom_collector.h"
#include "gtest/gtest.h"
#include "metric_values.h"
#include "sampler/memory_sampler.h"
#include "signals/oom/oom_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

using Labels = testing::SeriesLabels;

using testing::ValueOf;

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class CollectorFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char key_tmpl[] = "/tmp/stagewatch-fields-key-XXXXXX";
    char v2_tmpl[] = "/tmp/stagewatch-fields-v2-XXXXXX";
    key_root_ = mkdtemp(key_tmpl);
    v2_root_ = mkdtemp(v2_tmpl);
    std::filesystem::create_directories(key_root_ + kTrain);
    std::filesystem::create_directories(v2_root_ + kTrain);
    layout_.mode = CgroupMode::kHybrid;
    layout_.key = CGROUP_KEY_V1_MEMORY;
    layout_.key_root = key_root_;
    layout_.v1_memory_root = key_root_;
    layout_.v2_root = v2_root_;
  }
  void TearDown() override {
    std::filesystem::remove_all(key_root_);
    std::filesystem::remove_all(v2_root_);
  }

  uint64_t TrainId() const {
    struct stat st {};
    EXPECT_EQ(stat((key_root_ + kTrain).c_str(), &st), 0);
    return st.st_ino;
  }
  void SetOomKillCount(int n) {
    Write(key_root_ + kTrain + "/memory.oom_control",
          "oom_kill_disable 0\nunder_oom 0\noom_kill " + std::to_string(n) + "\n");
  }

  static constexpr const char* kTrain = "/stagewatch/train";
  std::string key_root_, v2_root_;
  CgroupLayout layout_;
};

oom_event KillIn(uint64_t cgroup_id, uint16_t kind) {
  oom_event e{};
  e.victim_cgroup_id = cgroup_id;
  e.trigger_cgroup_id = cgroup_id;
  e.kind = kind;
  e.victim_pid = 1 << 30;  // no such process: only the id names the cgroup
  std::strncpy(e.victim_comm, "sw-victim", sizeof(e.victim_comm) - 1);
  return e;
}

// The OOM tracker, the sampler reading the kernel's counts from memory.oom_control (kOomPart)
// and the collector that compares them.
struct OomParts {
  explicit OomParts(const std::string& key_root, const CgroupLayout& layout)
      : paths(key_root),
        stages({}, DiscoveryConfig{}),
        tracker(&paths, &stages, layout.key),
        namer(&paths, &stages, absl::ZeroDuration()),
        sampler(&namer, layout, MemoryConfig{}, {}, kMemoryPart | kOomPart),
        collector(&tracker, &stages, &sampler) {}
  std::vector<prometheus::MetricFamily> Collect() {
    std::vector<prometheus::MetricFamily> families;
    EXPECT_TRUE(collector.Collect(&families).ok());
    return families;
  }
  CgroupPathCache paths;
  StageResolver stages;
  OomTracker tracker;
  CgroupNamer namer;
  MemorySampler sampler;
  exporters::OomCollector collector;
};

const Labels kTrainLabels = {{"pipeline_stage", "train"}};

// Two kernel kills and one by a user-space killer, against a kernel count of 3: each kind is
// its own series, and the mismatch is the kernel's count minus the traced kernel kills (+1).
TEST_F(CollectorFieldsTest, OomKillsByKindAndTheMismatchSign) {
  OomParts oom(key_root_, layout_);
  SetOomKillCount(0);
  const absl::Time t0 = absl::Now();
  oom.sampler.SampleOnce(t0);

  const uint64_t id = TrainId();
  oom.tracker.OnEvent(KillIn(id, OOM_KIND_KERNEL));
  oom.tracker.OnEvent(KillIn(id, OOM_KIND_KERNEL));
  oom.tracker.OnEvent(KillIn(id, OOM_KIND_USERSPACE));
  oom.sampler.OnOomKill(t0 + absl::Seconds(1), id);
  SetOomKillCount(3);
  oom.sampler.SampleOnce(t0 + absl::Seconds(1));
  const std::vector<prometheus::MetricFamily> after = oom.Collect();

  EXPECT_EQ(ValueOf(after, "stagewatch_oom_kills_total",
                    {{"pipeline_stage", "train"}, {"kind", "kernel"}}), 2);
  EXPECT_EQ(ValueOf(after, "stagewatch_oom_kills_total",
                    {{"pipeline_stage", "train"}, {"kind", "userspace"}}), 1);
  EXPECT_EQ(ValueOf(after, "stagewatch_oom_kills_cgroup_total", kTrainLabels), 3);
  EXPECT_EQ(ValueOf(after, "stagewatch_oom_kills_mismatch", kTrainLabels), 1)
      << "kernel count 3 minus 2 traced kernel kills";
}

// The kernel's counts are read at one moment: a kill traced after it is compared with them
// once they are read again, so a scrape in between shows no mismatch (it showed -1).
TEST_F(CollectorFieldsTest, AKillTracedAfterTheKernelsCountWasReadIsNoMismatchBeforeTheNextRead) {
  OomParts oom(key_root_, layout_);
  SetOomKillCount(0);
  oom.sampler.SampleOnce(absl::Now());

  const uint64_t id = TrainId();
  oom_event kill = KillIn(id, OOM_KIND_KERNEL);
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  kill.timestamp_ns = mono.tv_sec * 1000000000ull + mono.tv_nsec;  // now: after the reading
  oom.tracker.OnEvent(kill);
  SetOomKillCount(1);
  std::vector<prometheus::MetricFamily> families = oom.Collect();
  EXPECT_EQ(ValueOf(families, "stagewatch_oom_kills_total",
                    {{"pipeline_stage", "train"}, {"kind", "kernel"}}), 1);
  EXPECT_EQ(ValueOf(families, "stagewatch_oom_kills_cgroup_total", kTrainLabels), 0);
  EXPECT_EQ(ValueOf(families, "stagewatch_oom_kills_mismatch", kTrainLabels), 0);

  oom.sampler.OnOomKill(absl::Now(), id);
  oom.sampler.ReadVictims(absl::Now());
  families = oom.Collect();
  EXPECT_EQ(ValueOf(families, "stagewatch_oom_kills_cgroup_total", kTrainLabels), 1);
  EXPECT_EQ(ValueOf(families, "stagewatch_oom_kills_mismatch", kTrainLabels), 0);

  // A kill the kernel counted and nobody traced is still a mismatch at the next reading.
  SetOomKillCount(2);
  oom.sampler.SampleOnce(absl::Now());
  EXPECT_EQ(ValueOf(oom.Collect(), "stagewatch_oom_kills_mismatch", kTrainLabels), 1);
}

// memory.pressure and io.pressure with four different totals: each PSI series shows its own.
TEST_F(CollectorFieldsTest, EachPressureSeriesShowsItsOwnTotal) {
  Write(v2_root_ + kTrain + "/memory.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n");
  Write(v2_root_ + kTrain + "/io.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=250000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=125000\n");
  CgroupPathCache paths(key_root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SampleReader reader{
      .stats = [](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
          const std::string& path = c.path;
        return absl::NotFoundError(path);
      },
      .limit = [](const std::string& path) -> absl::StatusOr<std::optional<uint64_t>> {
        return absl::NotFoundError(path);
      },
  };
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
  sampler.SampleOnce(absl::Now());  // pressure is read by the sampler, the scrape adapts it
  exporters::MemoryCollector collector({.sampler = &sampler, .namer = &namer});
  std::vector<prometheus::MetricFamily> families;
  ASSERT_TRUE(collector.Collect(&families).ok());

  const Labels train = {{"pipeline_stage", "train"}};
  auto pressure = [&](const std::string& what) {
    return ValueOf(families, "stagewatch_pressure_" + what + "_seconds_total", train);
  };
  EXPECT_DOUBLE_EQ(pressure("memory_waiting"), 1.5);
  EXPECT_DOUBLE_EQ(pressure("memory_stalled"), 0.5);
  EXPECT_DOUBLE_EQ(pressure("io_waiting"), 0.25);
  EXPECT_DOUBLE_EQ(pressure("io_stalled"), 0.125);
}

}  // namespace
}  // namespace stagewatch
