// The agent's sampler of discovered runs on a fixture tree laid out as a hybrid host's v1
// memory and cpu hierarchies: it keeps within its budget of reads a second, spreads the budget
// over every run in turn, and gives a run's end facts from its last reading.
#include "runs/discovered_sampler.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

namespace fs = std::filesystem;

class DiscoveredSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-sampler-XXXXXX";
    root_ = mkdtemp(tmpl);
    layout_.mode = CgroupMode::kHybrid;
    layout_.key = CGROUP_KEY_V1_MEMORY;
    layout_.key_root = root_ + "/memory";
    layout_.v1_memory_root = layout_.key_root;
    layout_.v1_roots = {{"memory", root_ + "/memory"}, {"cpu", root_ + "/cpu"},
                        {"cpuacct", root_ + "/cpu"}};
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& file, const std::string& text) {
    fs::create_directories(fs::path(file).parent_path());
    std::ofstream(file) << text;
  }
  // A run's memory files: usage, limit, peak and failcnt.
  void MemoryFiles(const std::string& path, uint64_t usage, uint64_t limit, uint64_t peak) {
    const std::string dir = root_ + "/memory" + path;
    Write(dir + "/memory.usage_in_bytes", std::to_string(usage) + "\n");
    Write(dir + "/memory.limit_in_bytes", std::to_string(limit) + "\n");
    Write(dir + "/memory.max_usage_in_bytes", std::to_string(peak) + "\n");
    Write(dir + "/memory.failcnt", "3\n");
  }

  std::string root_;
  CgroupLayout layout_;
};

TEST_F(DiscoveredSamplerTest, KeepsWithinItsReadsASecondAndTakesEveryRunInTurn) {
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .reads_per_second = 20});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10; ++i) {
    const std::string path = "/stagewatch/s/run_" + std::to_string(i);
    MemoryFiles(path, 100 << 20, 200 << 20, 150 << 20);
    sampler.Add("run_" + std::to_string(i), path, 100 + i, t0);
  }
  // Four memory files a run, and the cpu ones looked for: 20 reads take 5 runs a second.
  sampler.Sample(t0);
  EXPECT_EQ(sampler.reads(), 20u);
  EXPECT_EQ(sampler.TakePoints().size(), 5u);
  sampler.Sample(t0 + absl::Seconds(1));
  EXPECT_EQ(sampler.reads(), 40u);
  std::map<std::string, std::vector<RunSample>> second = sampler.TakePoints();
  ASSERT_EQ(second.size(), 5u);
  EXPECT_TRUE(second.count("run_9")) << "the other five took the second turn";
  EXPECT_FALSE(second.count("run_0"));
  // A second's worth at most: an idle minute does not buy a burst (of full readings: the
  // usage moved).
  for (int i = 0; i < 10; ++i) {
    MemoryFiles("/stagewatch/s/run_" + std::to_string(i), 110 << 20, 200 << 20, 150 << 20);
  }
  sampler.Sample(t0 + absl::Seconds(61));
  EXPECT_EQ(sampler.reads(), 60u);
}

TEST_F(DiscoveredSamplerTest, EndFactsComeFromTheLastReadingAndTheSeries) {
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .near_limit_fraction = 0.9, .reads_per_second = 1000});
  const std::string path = "/stagewatch/s/job_1";
  const std::string cpu_dir = root_ + "/cpu" + path;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  MemoryFiles(path, 100 << 20, 200 << 20, 120 << 20);
  sampler.Add("job_1", path, 7, t0);
  sampler.Sample(t0);
  // The cpu hierarchy's directory comes a moment later: its files are looked for again.
  Write(cpu_dir + "/cpuacct.usage", "2000000000\n");
  Write(cpu_dir + "/cpu.stat", "nr_periods 40\nnr_throttled 10\nthrottled_time 700000000\n");
  Write(cpu_dir + "/cpu.cfs_period_us", "100000\n");
  MemoryFiles(path, 190 << 20, 200 << 20, 195 << 20);
  sampler.Sample(t0 + absl::Seconds(1));
  MemoryFiles(path, 60 << 20, 200 << 20, 196 << 20);
  Write(cpu_dir + "/cpuacct.usage", "3500000000\n");
  sampler.Sample(t0 + absl::Seconds(2));

  std::vector<RunSample> points;
  std::optional<CgroupFacts> f = sampler.Remove("job_1", points);
  ASSERT_TRUE(f);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[1].memory_bytes, uint64_t{190} << 20);
  ASSERT_TRUE(points[2].cpu_cores);
  EXPECT_DOUBLE_EQ(*points[2].cpu_cores, 1.5);  // 1.5 s of CPU in a second
  EXPECT_EQ(f->memory_peak_bytes, uint64_t{196} << 20);
  EXPECT_EQ(f->memory_limit_bytes, uint64_t{200} << 20);
  EXPECT_EQ(f->memory_failcnt, 3u);
  EXPECT_EQ(f->memory_mean_bytes, (uint64_t{100 + 190 + 60} << 20) / 3);
  ASSERT_TRUE(f->near_limit_seconds);
  EXPECT_DOUBLE_EQ(*f->near_limit_seconds, 1);  // the one reading at 95% of the limit
  EXPECT_DOUBLE_EQ(*f->cpu_seconds, 3.5);
  EXPECT_DOUBLE_EQ(*f->cpu_throttled_seconds, 0.7);
  EXPECT_DOUBLE_EQ(*f->cpu_throttled_wall_seconds, 0.7);  // within 10 periods of 100 ms
  EXPECT_FALSE(f->memory_pressure_seconds);  // no cgroup2 mirror here
  EXPECT_EQ(sampler.runs(), 0u);
  EXPECT_FALSE(sampler.Remove("job_1", points));
}

}  // namespace
}  // namespace stagewatch

namespace stagewatch {
namespace {

// An idle run (memory usage and CPU time as at its last full reading) costs its usage and CPU
// time reads; what else changed shows at the next full reading: when either moves, or at the
// kFullReadEvery-th reading.
TEST_F(DiscoveredSamplerTest, AnIdleRunIsReadInFullOnlyWhenItsUsageOrCpuTimeMovesOrEveryTenth) {
  const std::string path = "/stagewatch/s/idle";
  const std::string cpu_dir = root_ + "/cpu" + path;
  MemoryFiles(path, 1 << 20, 2 << 20, 1 << 20);
  Write(cpu_dir + "/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
  Write(cpu_dir + "/cpuacct.usage", "5000000\n");
  OpenFileBudget budget{0};  // opened for each read, so that a removed file shows
  RunCgroupFiles files(layout_, path, &budget);
  absl::Time t = absl::FromUnixSeconds(1000);
  auto read = [&] {
    t += absl::Seconds(1);
    std::optional<RunCgroupReading> r = files.Read(t);
    EXPECT_TRUE(r);
    if (r) EXPECT_EQ(r->usage.at, t);
    return r ? std::pair(r->reads, *r->memory_peak_bytes) : std::pair(0, uint64_t{0});
  };
  EXPECT_EQ(read(), std::pair(6, uint64_t{1} << 20));
  EXPECT_EQ(read(), std::pair(2, uint64_t{1} << 20));  // usage and cpuacct.usage only
  Write(cpu_dir + "/cpuacct.usage", "6000000\n");
  EXPECT_EQ(read(), std::pair(6, uint64_t{1} << 20));  // its CPU time moved
  Write(root_ + "/memory" + path + "/memory.max_usage_in_bytes", "3145728\n");
  for (uint64_t i = 1; i < RunCgroupFiles::kFullReadEvery; ++i) {
    EXPECT_EQ(read(), std::pair(2, uint64_t{1} << 20)) << "idle reading " << i;
  }
  EXPECT_EQ(read(), std::pair(6, uint64_t{3} << 20));  // the tenth: in full
  Write(root_ + "/memory" + path + "/memory.usage_in_bytes", "4194304\n");
  EXPECT_EQ(read(), std::pair(6, uint64_t{3} << 20));  // its usage moved
  fs::remove(root_ + "/memory" + path + "/memory.usage_in_bytes");
  EXPECT_FALSE(files.Read(t + absl::Seconds(1))) << "no usage: the cgroup is gone";
}

// A run's cpu mirror (another hierarchy's directory of the same path) can come a moment after
// its memory directory: it is looked for within RunCgroupFiles::kOpenWindow of the first miss,
// and not after, so that thousands of runs without mirrors cost no failed lookups for ever.
TEST_F(DiscoveredSamplerTest, AMissingMirrorIsLookedForWithinItsWindowThenGivenUpOn) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const auto cpu_files = [&](const std::string& path) {
    Write(root_ + "/cpu" + path + "/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
    Write(root_ + "/cpu" + path + "/cpuacct.usage", "5000000\n");
  };
  OpenFileBudget budget{100};
  MemoryFiles("/stagewatch/s/early", 1 << 20, 2 << 20, 1 << 20);
  MemoryFiles("/stagewatch/s/late", 1 << 20, 2 << 20, 1 << 20);
  RunCgroupFiles early(layout_, "/stagewatch/s/early", &budget);
  RunCgroupFiles late(layout_, "/stagewatch/s/late", &budget);
  EXPECT_EQ(early.Read(t0)->reads, 4);  // the memory files; the cpu ones not there yet
  EXPECT_EQ(late.Read(t0)->reads, 4);

  cpu_files("/stagewatch/s/early");  // within the window: found, and its CPU time moved
  std::optional<RunCgroupReading> found = early.Read(t0 + absl::Seconds(2));
  EXPECT_EQ(found->reads, 6);
  EXPECT_EQ(found->cpu.usage_ns, 5000000u);

  // Still missing: given up. Nothing moved, so the usage is the one file read.
  EXPECT_EQ(late.Read(t0 + RunCgroupFiles::kOpenWindow)->reads, 1);
  cpu_files("/stagewatch/s/late");
  MemoryFiles("/stagewatch/s/late", 2 << 20, 2 << 20, 2 << 20);  // moved: read in full
  std::optional<RunCgroupReading> after = late.Read(t0 + RunCgroupFiles::kOpenWindow * 2);
  EXPECT_EQ(after->reads, 4);
  EXPECT_FALSE(after->cpu.usage_ns);
}

}  // namespace
}  // namespace stagewatch

namespace stagewatch {
namespace {

// A snapshot as the memory sampler publishes it, with one stage's domains; counts the asks.
class FakeSnapshots {
 public:
  void Publish(absl::Time taken, std::vector<DomainMemory> domains) {
    auto next = std::make_shared<Snapshot>();
    next->taken = taken;
    next->memory[1].domains = std::move(domains);
    latest_ = std::move(next);
  }
  std::function<std::shared_ptr<const Snapshot>()> Source() {
    return [this] {
      asks_++;
      return latest_;
    };
  }
  int asks() const { return asks_; }

 private:
  std::shared_ptr<const Snapshot> latest_;
  int asks_ = 0;
};

DomainMemory Domain(uint64_t id, uint64_t usage, std::optional<uint64_t> limit,
                    bool sampled = true) {
  return {.id = id, .path = "/unused", .sampled = sampled, .usage_bytes = usage,
          .limit_bytes = limit};
}

// The memory limit has one reader: a run whose cgroup is a limit domain takes its usage and
// limit from the sampler's snapshot, and neither reads their files nor spends budget on them.
TEST_F(DiscoveredSamplerTest, ALimitDomainsMemoryComesFromTheSnapshotNotItsFiles) {
  FakeSnapshots snapshots;
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .near_limit_fraction = 0.9, .reads_per_second = 1000,
                             .latest_snapshot = snapshots.Source()});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  // The files say otherwise, so that where each figure came from shows.
  MemoryFiles("/stagewatch/s/limited", 10 << 20, 500 << 20, 400 << 20);
  MemoryFiles("/stagewatch/s/unlimited", 30 << 20, 900 << 20, 40 << 20);
  sampler.Add("limited", "/stagewatch/s/limited", 41, t0);
  sampler.Add("unlimited", "/stagewatch/s/unlimited", 42, t0);
  snapshots.Publish(t0 - absl::Milliseconds(300),
                    {Domain(41, 190 << 20, 200 << 20), Domain(99, 1 << 20, 2 << 20)});

  sampler.Sample(t0);
  // limited: peak and failcnt (2); unlimited: usage, limit, peak, failcnt (4).
  EXPECT_EQ(sampler.reads(), 6u);
  EXPECT_EQ(sampler.from_snapshot(), 1u);
  EXPECT_EQ(snapshots.asks(), 1);
  std::map<std::string, std::vector<RunSample>> first = sampler.TakePoints();
  ASSERT_EQ(first["limited"].size(), 1u);
  EXPECT_EQ(first["limited"][0].memory_bytes, uint64_t{190} << 20);
  EXPECT_EQ(first["unlimited"][0].memory_bytes, uint64_t{30} << 20);

  // No newer snapshot since the run's last sample: its files are read, as without one
  // (limited: its usage is not the snapshot's, so in full; unlimited: idle, its usage alone).
  sampler.Sample(t0 + absl::Seconds(1));
  EXPECT_EQ(sampler.reads(), 6u + 4u + 1u);
  EXPECT_EQ(sampler.from_snapshot(), 1u);
  EXPECT_EQ(sampler.TakePoints()["limited"][0].memory_bytes, uint64_t{10} << 20);

  // A newer one where the domain sat the sample out (its files could not be read): read too.
  snapshots.Publish(t0 + absl::Milliseconds(1700), {Domain(41, 195 << 20, 200 << 20, false)});
  sampler.Sample(t0 + absl::Seconds(2));
  EXPECT_EQ(sampler.reads(), 11u + 2u);  // both idle since their last full reading

  snapshots.Publish(t0 + absl::Milliseconds(2700), {Domain(41, 185 << 20, 200 << 20)});
  sampler.Sample(t0 + absl::Seconds(3));
  EXPECT_EQ(sampler.reads(), 13u + 2u + 1u);
  EXPECT_EQ(sampler.from_snapshot(), 2u);

  std::vector<RunSample> points;
  std::optional<CgroupFacts> f = sampler.Remove("limited", points);
  ASSERT_TRUE(f);
  ASSERT_EQ(points.size(), 2u);  // the last two samples', not taken yet
  EXPECT_EQ(points[0].memory_bytes, uint64_t{10} << 20);
  EXPECT_EQ(points[1].memory_bytes, uint64_t{185} << 20);
  EXPECT_EQ(f->memory_limit_bytes, uint64_t{200} << 20) << "the snapshot's limit, not the file's";
  ASSERT_TRUE(f->limits);
  EXPECT_EQ(f->limits->memory_max_bytes, uint64_t{200} << 20);
  EXPECT_EQ(f->memory_peak_bytes, uint64_t{400} << 20);  // not in the snapshot: its file
  EXPECT_EQ(f->memory_failcnt, 3u);
}

// A cgroup gone since the snapshot: its own files are gone too, and the run gets no sample.
TEST_F(DiscoveredSamplerTest, ADomainWhoseCgroupWentSinceTheSnapshotGetsNoSample) {
  FakeSnapshots snapshots;
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .reads_per_second = 1000, .latest_snapshot = snapshots.Source()});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  sampler.Add("gone", "/stagewatch/s/gone", 41, t0);  // no files at all
  snapshots.Publish(t0 - absl::Milliseconds(300), {Domain(41, 190 << 20, 200 << 20)});
  sampler.Sample(t0);
  EXPECT_EQ(sampler.from_snapshot(), 0u);
  EXPECT_TRUE(sampler.TakePoints().empty());
}

// On v2 the snapshot's limit is the lower of memory.max and memory.high, and a run records
// memory.max: the snapshot's stands for it only while it is the memory.max read last and
// below memory.high, so that a change of either is read from memory.max itself.
TEST_F(DiscoveredSamplerTest, OnV2MemoryMaxIsReadWhereTheSnapshotsLimitMayBeMemoryHigh) {
  CgroupLayout v2;
  v2.key = CGROUP_KEY_DEFAULT;
  v2.key_root = v2.v2_root = root_ + "/unified";
  const std::string dir = v2.key_root + "/stagewatch/s/job";
  Write(dir + "/memory.current", "1000\n");
  Write(dir + "/memory.max", "300000000\n");
  Write(dir + "/memory.high", "max\n");
  Write(dir + "/memory.peak", "5000\n");
  Write(dir + "/memory.events", "low 0\nhigh 4\nmax 2\noom 0\noom_kill 0\n");
  OpenFileBudget budget{100};
  RunCgroupFiles files(v2, "/stagewatch/s/job", &budget);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  auto read = [&](int second, uint64_t limit) {
    const SampledMemory sampled{.usage_bytes = 150000000, .limit_bytes = limit};
    std::optional<RunCgroupReading> r = files.Read(t0 + absl::Seconds(second), &sampled);
    EXPECT_TRUE(r);
    EXPECT_EQ(r->usage.memory_bytes, 150000000u);
    return std::pair(r->usage.memory_limit_bytes, r->reads);
  };
  // No memory.max read yet: read (with peak, events and memory.high, the limits' first read).
  EXPECT_EQ(read(0, 300000000), std::pair(std::optional<uint64_t>(300000000), 4));
  EXPECT_EQ(read(1, 300000000), std::pair(std::optional<uint64_t>(300000000), 2));
  // memory.high set below memory.max: the sampler's limit is memory.high, not memory.max.
  Write(dir + "/memory.high", "200000000\n");
  EXPECT_EQ(read(2, 200000000), std::pair(std::optional<uint64_t>(300000000), 3));
  // memory.max lowered below it: read once, then the sampler's again.
  Write(dir + "/memory.max", "100000000\n");
  EXPECT_EQ(read(3, 100000000), std::pair(std::optional<uint64_t>(100000000), 3));
  EXPECT_EQ(read(4, 100000000).first, 100000000u);
  EXPECT_EQ(files.limits()->memory_max_bytes, 100000000u);
  EXPECT_EQ(files.limits()->memory_high_bytes, 200000000u);  // re-read at the 5th reading
  EXPECT_EQ(read(5, 100000000), std::pair(std::optional<uint64_t>(100000000), 2));
}

}  // namespace
}  // namespace stagewatch
