// The agent's sampler of discovered runs on a fixture tree laid out as a hybrid host's v1
// memory and cpu hierarchies: it keeps within its budget of reads a second, spreads the budget
// over every run in turn, and gives a run's end facts from its last reading.
#include "runs/discovered_sampler.h"

#include "cgroup_file_tree.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

class DiscoveredSamplerTest : public ::testing::Test {
 protected:
  // A run's memory files: usage, limit, peak and failcnt (3).
  void MemoryFiles(const std::string& path, uint64_t usage, uint64_t limit, uint64_t peak) {
    tree_.V1Memory(path, usage, limit, peak);
  }

  testing::CgroupFileTree tree_;
  CgroupLayout layout_ = tree_.V1();
};

TEST_F(DiscoveredSamplerTest, KeepsWithinItsReadsASecondAndTakesEveryRunInTurn) {
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .reads_per_second = 25});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10; ++i) {
    const std::string path = "/stagewatch/s/run_" + std::to_string(i);
    MemoryFiles(path, 100 << 20, 200 << 20, 150 << 20);
    sampler.Add("run_" + std::to_string(i), path, 100 + i, t0);
  }
  // Four memory files a run (the cpu ones looked for), and its point: 25 take 5 runs a second.
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

// The runs' series share kSeriesSamples: a few runs keep as many as a launched run, thousands
// keep kMinSeriesSamples each, and the share grows back as runs end.
TEST_F(DiscoveredSamplerTest, TheOpenRunsShareTheSamplesTheirSeriesKeep) {
  DiscoveredSampler sampler({.layout = layout_});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(sampler.series_samples(), UsageSeries::kMaxSamples);
  for (int i = 0; i < 5000; ++i) {
    sampler.Add("run_" + std::to_string(i), "/stagewatch/s/run_" + std::to_string(i), 100 + i, t0);
    if (i + 1 == 100) {
      EXPECT_EQ(sampler.series_samples(), kSeriesSamples / 100);
    }
  }
  EXPECT_EQ(sampler.series_samples(), kMinSeriesSamples);
  std::vector<RunSample> points;
  for (int i = 100; i < 5000; ++i) sampler.Remove("run_" + std::to_string(i), points);
  EXPECT_EQ(sampler.series_samples(), kSeriesSamples / 100);
}

// Each run's series keeps no more than its share, however long the runs live, and its end
// facts still take every sample's mean.
TEST_F(DiscoveredSamplerTest, ALongLivedRunKeepsNoMoreSamplesThanItsShare) {
  DiscoveredSampler sampler({.layout = layout_, .reads_per_second = 1'000'000,
                             .series_samples = 10 * kMinSeriesSamples});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10; ++i) {
    const std::string path = "/stagewatch/s/run_" + std::to_string(i);
    MemoryFiles(path, 100 << 20, 200 << 20, 150 << 20);
    sampler.Add("run_" + std::to_string(i), path, 100 + i, t0);
  }
  ASSERT_EQ(sampler.series_samples(), kMinSeriesSamples);
  for (int second = 0; second < 300; ++second) {
    sampler.Sample(t0 + absl::Seconds(second));
    sampler.TakePoints();
  }
  EXPECT_LT(sampler.kept_samples(), 10 * kMinSeriesSamples);
  EXPECT_GE(sampler.kept_samples(), 10 * kMinSeriesSamples / 2);
  std::vector<RunSample> points;
  std::optional<CgroupFacts> facts = sampler.Remove("run_0", points);
  ASSERT_TRUE(facts && facts->memory_mean_bytes);
  EXPECT_EQ(*facts->memory_mean_bytes, uint64_t{100} << 20);
}

TEST_F(DiscoveredSamplerTest, EndFactsComeFromTheLastReadingAndTheSeries) {
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .near_limit_fraction = 0.9, .reads_per_second = 1000});
  const std::string path = "/stagewatch/s/job_1";
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  MemoryFiles(path, 100 << 20, 200 << 20, 120 << 20);
  sampler.Add("job_1", path, 7, t0);
  sampler.Sample(t0);
  // The cpu hierarchy's directory comes a moment later: its files are looked for again.
  tree_.Write("cpu", path,
              {{"cpuacct.usage", "2000000000\n"},
               {"cpu.stat", "nr_periods 40\nnr_throttled 10\nthrottled_time 700000000\n"},
               {"cpu.cfs_period_us", "100000\n"}});
  MemoryFiles(path, 190 << 20, 200 << 20, 195 << 20);
  sampler.Sample(t0 + absl::Seconds(1));
  MemoryFiles(path, 60 << 20, 200 << 20, 196 << 20);
  tree_.Write("cpu", path, {{"cpuacct.usage", "3500000000\n"}});
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
  MemoryFiles(path, 1 << 20, 2 << 20, 1 << 20);
  tree_.Write("cpu", path, {{"cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"},
                            {"cpuacct.usage", "5000000\n"}});
  OpenCgroupFiles budget{0};  // opened for each read, so that a removed file shows
  RunCgroupFiles files(layout_, path, &budget);
  absl::Time t = absl::FromUnixSeconds(1000);
  auto read = [&] {
    t += absl::Seconds(1);
    std::optional<RunCgroupReading> r = files.Read(t);
    EXPECT_TRUE(r);
    if (r) {
      EXPECT_EQ(r->usage.at, t);
    }
    return r ? std::pair(r->reads, *r->memory_peak_bytes) : std::pair(0, uint64_t{0});
  };
  EXPECT_EQ(read(), std::pair(6, uint64_t{1} << 20));
  EXPECT_EQ(read(), std::pair(2, uint64_t{1} << 20));  // usage and cpuacct.usage only
  tree_.Write("cpu", path, {{"cpuacct.usage", "6000000\n"}});
  EXPECT_EQ(read(), std::pair(6, uint64_t{1} << 20));  // its CPU time moved
  tree_.Write("memory", path, {{"memory.max_usage_in_bytes", "3145728\n"}});
  for (uint64_t i = 1; i < RunCgroupFiles::kFullReadEvery; ++i) {
    EXPECT_EQ(read(), std::pair(2, uint64_t{1} << 20)) << "idle reading " << i;
  }
  EXPECT_EQ(read(), std::pair(6, uint64_t{3} << 20));  // the tenth: in full
  tree_.Write("memory", path, {{"memory.usage_in_bytes", "4194304\n"}});
  EXPECT_EQ(read(), std::pair(6, uint64_t{3} << 20));  // its usage moved
  tree_.Remove("memory", path, "memory.usage_in_bytes");
  EXPECT_FALSE(files.Read(t + absl::Seconds(1))) << "no usage: the cgroup is gone";
}

// A run's cpu mirror (another hierarchy's directory of the same path) can come a moment after
// its memory directory: it is looked for within RunCgroupFiles::kOpenWindow of the first miss,
// and not after, so that thousands of runs without mirrors cost no failed lookups for ever.
TEST_F(DiscoveredSamplerTest, AMissingMirrorIsLookedForWithinItsWindowThenGivenUpOn) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const auto cpu_files = [&](const std::string& path) {
    tree_.Write("cpu", path, {{"cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"},
                              {"cpuacct.usage", "5000000\n"}});
  };
  OpenCgroupFiles budget{100};
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

// A sampled domain; its files (beside usage and limit) as the sampler would have read them.
DomainMemory Domain(uint64_t id, uint64_t usage, std::optional<uint64_t> limit,
                    bool sampled = true) {
  return {.id = id, .path = "/unused", .sampled = sampled, .usage_bytes = usage,
          .limit_bytes = limit, .peak_bytes = uint64_t{198} << 20,
          .failcnt = 7};
}

// The memory usage has one reader: a run whose cgroup is a limit domain takes its usage, peak
// and failcnt from the sampler's snapshot, and neither reads those files nor spends budget on
// them. On v1 it reads memory.failcnt alone, which tells whether its cgroup is still there.
// Its limit it reads itself with its other limits (the snapshot's may be 10 samples old).
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
  // limited: failcnt, and its limit with the others (2); unlimited: usage, limit, peak,
  // failcnt (4).
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
  EXPECT_EQ(sampler.reads(), 13u + 1u + 1u);
  EXPECT_EQ(sampler.from_snapshot(), 2u);

  std::vector<RunSample> points;
  std::optional<CgroupFacts> f = sampler.Remove("limited", points);
  ASSERT_TRUE(f);
  ASSERT_EQ(points.size(), 2u);  // the last two samples', not taken yet
  EXPECT_EQ(points[0].memory_bytes, uint64_t{10} << 20);
  EXPECT_EQ(points[1].memory_bytes, uint64_t{185} << 20);
  EXPECT_EQ(f->memory_limit_bytes, uint64_t{500} << 20) << "the file's limit, not the snapshot's";
  ASSERT_TRUE(f->limits);
  EXPECT_EQ(f->limits->memory_max_bytes, uint64_t{500} << 20);
  EXPECT_EQ(f->memory_peak_bytes, uint64_t{198} << 20) << "the snapshot's peak, not the file's";
  EXPECT_EQ(f->memory_failcnt, 3u) << "v1: the file's, read to tell the cgroup is there";
}

// A cgroup gone since the snapshot: its own files are gone too, and the run gets no sample.
// v1 finds it by its memory.failcnt, v2 (which reads no memory file then) by its cpu.stat.
TEST_F(DiscoveredSamplerTest, ADomainWhoseCgroupWentSinceTheSnapshotGetsNoSample) {
  for (const CgroupLayout& layout : {tree_.V1(), tree_.V2()}) {
    SCOPED_TRACE(layout.key == CGROUP_KEY_DEFAULT ? "v2" : "v1");
    FakeSnapshots snapshots;
    DiscoveredSampler sampler({.layout = layout, .interval = absl::Seconds(1),
                               .reads_per_second = 1000, .latest_snapshot = snapshots.Source()});
    const absl::Time t0 = absl::FromUnixSeconds(1000);
    sampler.Add("gone", "/stagewatch/s/gone", 41, t0);  // no files at all
    snapshots.Publish(t0 - absl::Milliseconds(300), {Domain(41, 190 << 20, 200 << 20)});
    sampler.Sample(t0);
    EXPECT_EQ(sampler.from_snapshot(), 0u);
    EXPECT_TRUE(sampler.TakePoints().empty());
  }
}

// On v2 a limit domain's run reads none of its memory files but its limits: the snapshot holds
// its usage, the kernel's peak and the "max" count of memory.events. Its limits it reads itself,
// with the CPU ones, since the sampler's may be kFullReadEvery samples old (here they differ
// from the files, as after a job scheduler resized the job). Its cpu.stat, in the same
// directory, tells it is there.
TEST_F(DiscoveredSamplerTest, OnV2ALimitDomainsRunReadsOnlyItsLimitsAmongItsMemoryFiles) {
  const CgroupLayout v2 = tree_.V2();
  const std::string path = "/stagewatch/s/job";
  const std::string dir = v2.key_root + path;
  tree_.Write("unified", path,
              {{"memory.current", "1000\n"}, {"memory.max", "300000000\n"},
               {"memory.high", "250000000\n"}, {"memory.peak", "5000\n"},
               {"memory.events", "low 0\nhigh 4\nmax 2\noom 0\noom_kill 0\n"},
               {"cpu.stat", "usage_usec 7000\nuser_usec 5000\nsystem_usec 2000\n"},
               {"cpu.max", "max 100000\n"}, {"cpu.weight", "100\n"}});
  OpenCgroupFiles budget{0};  // opened for each read: a removed file is seen at once
  RunCgroupFiles own(v2, path, &budget), sampled_files(v2, path, &budget);
  const SampledMemory sampled{.usage_bytes = 150000000, .peak_bytes = 190000000, .failcnt = 9};
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int second = 0; second < 2; ++second) {
    SCOPED_TRACE(second);
    const absl::Time at = t0 + absl::Seconds(second);
    // Moved, so that its own reading is a full one (an idle one reads current and cpu.stat).
    tree_.Write("unified", path, {{"memory.current", std::to_string(1000 + second) + "\n"}});
    std::optional<RunCgroupReading> mine = own.Read(at);
    std::optional<RunCgroupReading> theirs = sampled_files.Read(at, &sampled);
    ASSERT_TRUE(mine && theirs);
    EXPECT_EQ(mine->usage.memory_limit_bytes, 300000000u);
    EXPECT_EQ(mine->memory_failcnt, 2u);
    EXPECT_EQ(theirs->usage.memory_bytes, 150000000u);
    EXPECT_EQ(theirs->usage.memory_limit_bytes, 300000000u);
    EXPECT_EQ(theirs->memory_peak_bytes, 190000000u);
    EXPECT_EQ(theirs->memory_failcnt, 9u);
    EXPECT_EQ(theirs->cpu.usage_ns, 7000000u);
    // current, peak, events; and memory.max too on the second, the limits' off reading.
    EXPECT_EQ(mine->reads - theirs->reads, second == 0 ? 3 : 4);
  }
  for (const RunCgroupFiles* files : {&own, &sampled_files}) {
    EXPECT_EQ(files->limits()->memory_high_bytes, 250000000u);
    EXPECT_EQ(files->limits()->memory_max_bytes, 300000000u);
  }

  // A limit written while the run's usage sits still shows at its next limits reading.
  tree_.Write("unified", path, {{"memory.max", "200000000\n"}, {"memory.high", "max\n"}});
  for (int second = 2; second < 2 + RunCgroupFiles::kLimitsEvery; ++second) {
    ASSERT_TRUE(sampled_files.Read(t0 + absl::Seconds(second), &sampled));
  }
  EXPECT_EQ(sampled_files.limits()->memory_max_bytes, 200000000u);
  EXPECT_EQ(sampled_files.limits()->memory_high_bytes, std::nullopt);

  std::filesystem::remove(dir + "/cpu.stat");  // as when the cgroup is removed
  EXPECT_FALSE(sampled_files.Read(t0 + absl::Seconds(10), &sampled));
}

// TakePoints() looks only at the runs that got points since it last ran: a run's points taken
// after any number of takes that found none are all there, once, and a removed run's go with
// Remove(), not to a take.
TEST_F(DiscoveredSamplerTest, EveryPointIsTakenOnceHoweverManyEmptyTakesCameBetween) {
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .reads_per_second = 1000});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) {
    const std::string path = "/stagewatch/s/run_" + std::to_string(i);
    MemoryFiles(path, 100 << 20, 200 << 20, 150 << 20);
    sampler.Add("run_" + std::to_string(i), path, 100 + i, t0);
  }
  sampler.Sample(t0);
  EXPECT_EQ(sampler.TakePoints().size(), 3u);
  for (int i = 0; i < 20; ++i) {
    sampler.Sample(t0 + absl::Milliseconds(10 * i));  // none is due again yet
    EXPECT_TRUE(sampler.TakePoints().empty());
  }
  sampler.Sample(t0 + absl::Seconds(1));
  sampler.Sample(t0 + absl::Seconds(2));
  std::vector<RunSample> removed_points;
  EXPECT_TRUE(sampler.Remove("run_1", removed_points));
  EXPECT_EQ(removed_points.size(), 2u);
  std::map<std::string, std::vector<RunSample>> taken = sampler.TakePoints();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken["run_0"].size(), 2u);
  EXPECT_EQ(taken["run_2"].size(), 2u);
  EXPECT_TRUE(sampler.TakePoints().empty());
}

// A run that leaves the turn takes its place with it, and one added again (the same id, a
// restarted run) joins at the back, once: the others keep their order.
TEST_F(DiscoveredSamplerTest, ARunLeavingAndComingBackKeepsTheOthersTurns) {
  // Five a second: a first reading of one run (four memory files and its point).
  DiscoveredSampler sampler({.layout = layout_, .interval = absl::Seconds(1),
                             .reads_per_second = 5});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const auto path = [](int i) { return "/stagewatch/s/run_" + std::to_string(i); };
  for (int i = 0; i < 4; ++i) {
    MemoryFiles(path(i), 100 << 20, 200 << 20, 150 << 20);
    sampler.Add("run_" + std::to_string(i), path(i), 100 + i, t0);
  }
  const auto sampled_at = [&](absl::Duration after) {
    sampler.Sample(t0 + after);
    std::vector<std::string> ids;
    for (const auto& [id, points] : sampler.TakePoints()) ids.push_back(id);
    return ids;
  };
  EXPECT_EQ(sampled_at(absl::ZeroDuration()), std::vector<std::string>{"run_0"});
  std::vector<RunSample> points;
  EXPECT_FALSE(sampler.Remove("run_1", points));  // never sampled: no facts
  EXPECT_EQ(sampled_at(absl::Seconds(1)), std::vector<std::string>{"run_2"});
  sampler.Add("run_1", path(1), 101, t0 + absl::Seconds(1));
  sampler.Add("run_1", path(1), 101, t0 + absl::Seconds(1));  // added once only
  EXPECT_EQ(sampler.runs(), 4u);
  EXPECT_EQ(sampled_at(absl::Seconds(2)), std::vector<std::string>{"run_3"});
  // run_0 again (its second reading costs less), then run_1, back in the turn.
  int run_1_points = 0;
  for (int s = 3; s < 5; ++s) {
    for (const std::string& id : sampled_at(absl::Seconds(s))) run_1_points += id == "run_1";
  }
  EXPECT_EQ(run_1_points, 1) << "one turn a pass, however often it was added";
}

}  // namespace
}  // namespace stagewatch
