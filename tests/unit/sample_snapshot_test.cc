// The sampler's snapshot: every part read once per interval (the OOM counts on their slower
// clock), and the memory, sched and oom collectors and the anomaly feeder all adapt the same
// immutable object.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "anomaly/anomaly_engine.h"
#include "anomaly/anomaly_feeder.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/open_cgroup_files.h"
#include "cgroup/path_cache.h"
#include "exporters/metrics/memory_collector.h"
#include "exporters/metrics/oom_collector.h"
#include "exporters/metrics/sched_collector.h"
#include "gtest/gtest.h"
#include "metric_values.h"
#include "sampler/memory_sampler.h"
#include "signals/oom/oom_tracker.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

using Labels = testing::SeriesLabels;

using testing::ValueOf;

class SampleSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-snapshot-XXXXXX";
    root_ = mkdtemp(tmpl);
    std::filesystem::create_directories(root_ + kTop);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Serves `psi_` and `cpu_` for the top, and counts every read by file.
  SampleReader Reader() {
    return {
        .stats = [this](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
          const std::string& path = c.path;
          reads_["memory " + path]++;
          MemoryCgroupStats m;
          m.usage_bytes = m.working_set_bytes = 100 << 20;
          return m;
        },
        .limit = [this](const std::string& path) -> absl::StatusOr<std::optional<uint64_t>> {
          reads_["limit " + path]++;
          return std::nullopt;
        },
        .pressure = [this](const NamedCgroup& top,
                           std::string_view resource) -> absl::StatusOr<PsiTotals> {
          reads_[std::string(resource) + ".pressure " + top.path]++;
          return psi_.at(std::string(resource));
        },
        .cpu = [this](const NamedCgroup& top) -> absl::StatusOr<CpuCgroupStats> {
          reads_["cpu.stat " + top.path]++;
          return cpu_;
        },
        .oom_kills = [this](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
          reads_["oom_kill " + c.path]++;
          return oom_kills_;
        },
    };
  }
  // Reads of the files whose key starts with `prefix` (e.g. "oom_kill ": every cgroup's).
  int ReadsOf(std::string_view prefix) const {
    int n = 0;
    for (const auto& [file, count] : reads_) n += file.starts_with(prefix) ? count : 0;
    return n;
  }
  int Reads() const {
    int n = 0;
    for (const auto& [file, count] : reads_) n += count;
    return n;
  }
  void Serve(uint64_t scale) {
    psi_["memory"] = {.some_us = 3000000 * scale, .full_us = 1000000 * scale};
    psi_["io"] = {.some_us = 500000 * scale, .full_us = 250000 * scale};
    psi_["cpu"] = {.some_us = 2000000 * scale, .full_us = 0};
    cpu_ = {.usage_ns = 7000000000 * scale, .nr_periods = 40 * scale,
            .nr_throttled = 4 * scale, .throttled_ns = 1500000000 * scale};
  }

  static constexpr const char* kTop = "/stagewatch/snapshot-train";
  std::string root_;
  CgroupLayout layout_;  // v2-keyed, no mounts: every file comes from Reader()
  std::map<std::string, PsiTotals> psi_;
  CpuCgroupStats cpu_;
  uint64_t oom_kills_ = 0;  // the top's own oom_kill count
  std::map<std::string, int> reads_;
};

TEST_F(SampleSnapshotTest, ScrapesReadNothingAndSeeWhatTheDetectorsWereFed) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader());
  AnomalyEngine engine(AnomalyConfig{}, [](const AnomalyChange&) {});
  AnomalyFeeder feeder(&engine, &stages, {});
  exporters::MemoryCollector memory({.sampler = &sampler, .namer = &namer});
  exporters::SchedCollector sched(nullptr, &stages, &sampler);
  const Labels train = {{"pipeline_stage", "snapshot-train"}};

  const absl::Time t0 = absl::FromUnixSeconds(5000);
  Serve(1);
  sampler.SampleOnce(t0);
  Serve(2);
  sampler.SampleOnce(t0 + absl::Seconds(1));
  const std::shared_ptr<const Snapshot> snapshot = sampler.Latest();
  feeder.Feed(t0 + absl::Seconds(1), *snapshot);
  // One read of each file of the top per sample, memory.pressure, io.pressure, cpu.pressure
  // and cpu.stat among them.
  for (const char* file : {"memory.pressure ", "io.pressure ", "cpu.pressure ", "cpu.stat "}) {
    EXPECT_EQ(reads_[file + std::string(kTop)], 2) << file;
  }

  const int reads = Reads();
  std::vector<prometheus::MetricFamily> scrapes[2];
  for (auto& scrape : scrapes) {
    ASSERT_TRUE(memory.Collect(&scrape).ok());
    ASSERT_TRUE(sched.Collect(&scrape).ok());
  }
  EXPECT_EQ(Reads(), reads) << "a scrape read a cgroup file";
  EXPECT_EQ(sampler.Latest(), snapshot) << "the scrapes saw the object the feeder was given";

  const StageId id = stages.Resolve(kTop).id;
  const StagePressure& p = snapshot->pressure.at(id);
  const StageCpu& c = snapshot->cpu.at(id);
  // The kernel's totals of the second reading (cgroupfs counts from the cgroup's birth).
  EXPECT_EQ(p.memory_some_us, 6000000u);
  EXPECT_EQ(c.usage_ns, 14000000000u);
  EXPECT_EQ(c.throttled_periods, 8u);
  for (const auto& scrape : scrapes) {
    auto value = [&](const std::string& name) { return ValueOf(scrape, name, train); };
    EXPECT_DOUBLE_EQ(value("stagewatch_pressure_memory_waiting_seconds_total"), 6.0);
    EXPECT_DOUBLE_EQ(value("stagewatch_pressure_memory_stalled_seconds_total"), 2.0);
    EXPECT_DOUBLE_EQ(value("stagewatch_pressure_io_waiting_seconds_total"), 1.0);
    EXPECT_DOUBLE_EQ(value("stagewatch_pressure_io_stalled_seconds_total"), 0.5);
    EXPECT_DOUBLE_EQ(value("stagewatch_pressure_cpu_waiting_seconds_total"), 4.0);
    EXPECT_DOUBLE_EQ(value("stagewatch_cgroup_cpu_usage_seconds_total"), 14.0);
    EXPECT_DOUBLE_EQ(value("stagewatch_cpu_cfs_periods_total"), 80);
    EXPECT_DOUBLE_EQ(value("stagewatch_cpu_cfs_throttled_periods_total"), 8);
    EXPECT_DOUBLE_EQ(value("stagewatch_cpu_cfs_throttled_seconds_total"), 3.0);
  }
  // The pressure detector was fed the memory "full" total of the same reading.
  ASSERT_TRUE(snapshot->memory.at(id).psi_full_seconds.has_value());
  EXPECT_DOUBLE_EQ(*snapshot->memory.at(id).psi_full_seconds, 2.0);

  // The next sample replaces the snapshot; the old one, still held, is unchanged.
  Serve(3);
  sampler.SampleOnce(t0 + absl::Seconds(2));
  EXPECT_NE(sampler.Latest(), snapshot);
  EXPECT_EQ(sampler.Latest()->cpu.at(id).usage_ns, 21000000000u);
  EXPECT_EQ(snapshot->cpu.at(id).usage_ns, 14000000000u);
}

TEST_F(SampleSnapshotTest, WithoutTheSchedSignalTheCpuPartIsNotRead) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader(), kMemoryPart);
  Serve(1);
  sampler.SampleOnce(absl::FromUnixSeconds(5000));
  EXPECT_EQ(reads_["memory.pressure " + std::string(kTop)], 1);
  EXPECT_EQ(reads_["cpu.stat " + std::string(kTop)], 0);
  EXPECT_EQ(reads_["cpu.pressure " + std::string(kTop)], 0);
  EXPECT_TRUE(sampler.Latest()->cpu.empty());
  EXPECT_EQ(sampler.Latest()->pressure.size(), 1u);
  EXPECT_EQ(reads_["oom_kill " + std::string(kTop)], 0) << "the oom signal is off";
  EXPECT_TRUE(sampler.Latest()->oom_kills.empty());
}

// The kernel's oom_kill counts: a baseline at the first sample, then every cgroup's once a
// minute, the victim's alone at a traced kill and every cgroup's in each sample for a few
// seconds after; a scrape reads nothing and shows the snapshot's.
TEST_F(SampleSnapshotTest, OomCountsAreReadOnTheirOwnClockAndScrapesOnlyAdaptThem) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader(), kMemoryPart | kOomPart);
  OomTracker tracker(&paths, &stages, layout_.key);
  exporters::OomCollector oom(&tracker, &stages, &sampler);
  const std::string file = "oom_kill " + std::string(kTop);
  auto oom_reads = [this] { return ReadsOf("oom_kill "); };
  const Labels train = {{"pipeline_stage", "snapshot-train"}};
  Serve(1);

  const absl::Time t0 = absl::FromUnixSeconds(5000);
  oom_kills_ = 2;  // kills before the agent started: the baseline, not news
  sampler.SampleOnce(t0);
  const StageId id = stages.Resolve(kTop).id;
  const int per_pass = oom_reads();  // every live cgroup: the top and its ancestors here
  EXPECT_EQ(reads_[file], 1);
  EXPECT_GE(per_pass, 2);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 0u);
  EXPECT_EQ(sampler.Latest()->oom_kills_read, t0);

  oom_kills_ = 3;  // a kill no event reported: found by the once-a-minute reading
  for (int s = 1; s < 60; s++) sampler.SampleOnce(t0 + absl::Seconds(s));
  EXPECT_EQ(oom_reads(), per_pass) << "read again before kOomCountsInterval";
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 0u) << "the last reading is carried";
  sampler.SampleOnce(t0 + absl::Seconds(60));
  EXPECT_EQ(oom_reads(), 2 * per_pass);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 1u);

  // A traced kill in the top: its own count is read at once, no other cgroup's.
  uint64_t top_id = 0;
  for (const NamedCgroup& c : *namer.Live()) top_id = c.path == kTop ? c.id : top_id;
  ASSERT_NE(top_id, 0u);
  oom_kills_ = 4;
  const absl::Time kill = t0 + absl::Seconds(60) + absl::Milliseconds(400);
  sampler.OnOomKill(kill, top_id);
  const std::shared_ptr<const Snapshot> before = sampler.Latest();
  sampler.ReadVictims(kill);
  EXPECT_EQ(oom_reads(), 2 * per_pass + 1);
  EXPECT_EQ(reads_[file], 3);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 2u);
  EXPECT_EQ(sampler.Latest()->oom_kills_read, kill);
  EXPECT_EQ(sampler.Latest()->memory.at(id).usage_bytes, before->memory.at(id).usage_bytes);
  EXPECT_EQ(before->oom_kills.at(id), 1u) << "a snapshot already taken is unchanged";
  sampler.ReadVictims(kill);  // nothing new: nothing read
  EXPECT_EQ(oom_reads(), 2 * per_pass + 1);

  // Then every cgroup's in each sample within kAfterOomKill of it (61..65 s), then not.
  for (int s = 61; s <= 70; s++) sampler.SampleOnce(t0 + absl::Seconds(s));
  EXPECT_EQ(oom_reads(), 2 * per_pass + 1 + 5 * per_pass);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 2u);
  EXPECT_EQ(sampler.Latest()->oom_kills_read, t0 + absl::Seconds(65));

  const int reads = Reads();
  for (int scrape = 0; scrape < 2; scrape++) {
    std::vector<prometheus::MetricFamily> families;
    ASSERT_TRUE(oom.Collect(&families).ok());
    EXPECT_DOUBLE_EQ(ValueOf(families, "stagewatch_oom_kills_cgroup_total", train), 2);
    EXPECT_DOUBLE_EQ(ValueOf(families, "stagewatch_oom_kills_mismatch", train), 2)
        << "two kernel kills counted, none traced";
  }
  EXPECT_EQ(Reads(), reads) << "a scrape read a cgroup file";
}

// A top whose CPU time did not move had no task run: it is still, and its CPU time is its only
// file read in that sample. Its memory, cpu.stat and pressure are read on its turn of the
// slower round, and at once when the time moves.
TEST_F(SampleSnapshotTest, AStillTopReadsOnlyItsCpuTimeUntilItsRoundOrItMoves) {
  for (const bool v1 : {true, false}) {
    SCOPED_TRACE(v1 ? "v1 layout" : "v2 layout");
    reads_.clear();
    CgroupPathCache paths(root_);
    StageResolver stages({}, DiscoveryConfig{});
    CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
    SampleReader reader = Reader();
    uint64_t usage = 100 << 20;
    reader.stats = [&](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
      reads_["memory " + c.path]++;
      return MemoryCgroupStats{.usage_bytes = usage, .working_set_bytes = usage};
    };
    reader.usage = [&](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
      reads_["memory usage " + c.path]++;
      return usage;
    };
    if (v1) {  // cpuacct.usage asked first; on v2 cpu.stat holds the time
      reader.cpu_time = [&](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
        reads_["cpu time " + c.path]++;
        return *cpu_.usage_ns;
      };
    }
    MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
    const std::string memory_psi = "memory.pressure " + std::string(kTop);
    const std::string cpu_stat = "cpu.stat " + std::string(kTop);
    const StageId id = stages.Resolve(kTop).id;
    Serve(1);
    const absl::Time t0 = absl::FromUnixSeconds(5000);
    sampler.SampleOnce(t0);
    ASSERT_EQ(reads_[memory_psi], 1);
    ASSERT_EQ(ReadsOf("memory "), 1);
    uint64_t top_id = 0;
    for (const NamedCgroup& c : *namer.Live()) top_id = c.path == kTop ? c.id : top_id;

    // Still for 20 samples, while a blocked task's stall grows: everything but the CPU time is
    // read only on the top's two turns of the round.
    psi_["memory"].some_us += 5000000;
    for (int s = 1; s <= 2 * int(kFullReadEvery); s++) sampler.SampleOnce(t0 + absl::Seconds(s));
    const int read_again = reads_[memory_psi] - 1;
    EXPECT_EQ(read_again, 2);
    const int still = 2 * int(kFullReadEvery) - read_again;
    EXPECT_EQ(reads_["cpu time " + std::string(kTop)], v1 ? still : 0);
    EXPECT_EQ(reads_[cpu_stat], 1 + read_again + (v1 ? 0 : still));
    EXPECT_EQ(ReadsOf("memory "), 1 + read_again) << "one memory file each time it was read";
    EXPECT_EQ(sampler.Latest()->pressure.at(id).memory_some_us, 8000000u)
        << "the stall caught up with at a read";

    // Memory charged from outside while no task runs (a socket's receive buffers): seen within
    // kFullReadEvery samples, not at the next one unless that is the top's turn.
    int s = 2 * int(kFullReadEvery) + 1;
    if ((top_id + s) % kFullReadEvery == 0) sampler.SampleOnce(t0 + absl::Seconds(s++));
    usage += 1 << 20;
    int samples_to_see = 0;
    while (sampler.Latest()->memory.at(id).usage_bytes != usage && samples_to_see <= 20) {
      sampler.SampleOnce(t0 + absl::Seconds(s++));
      samples_to_see++;
    }
    EXPECT_GT(samples_to_see, 1);
    EXPECT_LE(samples_to_see, int(kFullReadEvery));

    // The CPU time moves, on a sample that is not the top's turn of the round: read at once.
    if ((top_id + s) % kFullReadEvery == 0) sampler.SampleOnce(t0 + absl::Seconds(s++));
    const int psi_before = reads_[memory_psi], stat_before = reads_[cpu_stat];
    const int memory_before = ReadsOf("memory ");
    cpu_.usage_ns = *cpu_.usage_ns + 1000000;
    psi_["memory"].some_us += 1000000;
    usage += 4096;
    sampler.SampleOnce(t0 + absl::Seconds(s++));
    EXPECT_EQ(reads_[memory_psi], psi_before + 1);
    EXPECT_EQ(reads_[cpu_stat], stat_before + 1);
    EXPECT_EQ(ReadsOf("memory "), memory_before + 2) << "its usage, moved, then its stats";
    EXPECT_EQ(sampler.Latest()->pressure.at(id).memory_some_us, 9000000u);
    EXPECT_EQ(sampler.Latest()->cpu.at(id).usage_ns, 7001000000u);
    EXPECT_EQ(sampler.Latest()->memory.at(id).usage_bytes, usage);
  }
}

// With the sched probe saying which cgroups a task ran in since the last sample, a top none of
// whose tasks ran reads no file off its turn of the round (its CPU time too, unless that is
// another hierarchy's, v1's cpuacct), and on its turn its memory.stat only after
// kQuietFullReadEvery samples. A task that ran in it or beneath it, a cgroup the probe
// names that the sampler does not know, or a sample the probe cannot speak for (then the CPU
// time decides, where the top has one), has it read at once; a task that ran in another top,
// an ancestor or the root does not.
TEST_F(SampleSnapshotTest, ATopNoTaskOfWhichRanReadsNothingUntilItsRoundOrATaskRuns) {
  enum Layout { kV1MemoryOnly, kV1WithCpuMirror, kV2 };
  for (const Layout layout : {kV1MemoryOnly, kV1WithCpuMirror, kV2}) {
    SCOPED_TRACE(layout == kV1MemoryOnly      ? "v1, the memory hierarchy only"
                 : layout == kV1WithCpuMirror ? "v1, with cpu and cpuacct mirrors"
                                              : "v2");
    reads_.clear();
    const std::string top = kTop;
    std::filesystem::create_directories(root_ + top + "/run_1");
    std::filesystem::create_directories(root_ + "/stagewatch/snapshot-serve");
    CgroupPathCache paths(root_);
    StageResolver stages({}, DiscoveryConfig{});
    CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
    SampleReader reader = Reader();
    reader.usage = [&](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
      reads_["memory usage " + c.path]++;
      return 100 << 20;
    };
    if (layout == kV1MemoryOnly) {
      reader.cpu = [&](const NamedCgroup& c) -> absl::StatusOr<CpuCgroupStats> {
        reads_["cpu.stat " + c.path]++;
        return absl::NotFoundError("no cpu hierarchy at this path");
      };
    }
    if (layout != kV2) {
      reader.cpu_time = [&](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
        reads_["cpu time " + c.path]++;
        if (layout == kV1MemoryOnly) return absl::NotFoundError("no cpuacct hierarchy");
        return *cpu_.usage_ns;
      };
    }
    std::optional<std::vector<uint64_t>> ran = std::vector<uint64_t>{};
    MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
    sampler.OnTasksRanTraced([&ran] { return ran; });
    Serve(1);
    const absl::Time t0 = absl::FromUnixSeconds(5000);
    int s = 0;
    sampler.SampleOnce(t0);
    std::map<std::string, uint64_t> id;
    for (const NamedCgroup& c : *namer.Live()) id[c.path] = c.id;
    ASSERT_TRUE(id.contains(top) && id.contains(top + "/run_1") && id.contains("/"));
    const std::string memory_psi = "memory.pressure " + top, cpu_time = "cpu time " + top;
    auto top_reads = [&] {
      int n = 0;
      for (const auto& [file, count] : reads_) n += file.ends_with(" " + top) ? count : 0;
      return n;
    };

    // Nothing ran for 20 samples: the top is read on its two turns of the round only.
    int samples_read = 0, cpu_times_before = reads_[cpu_time];
    for (int i = 0; i < 2 * int(kFullReadEvery); i++) {
      const int before = top_reads() - reads_[cpu_time];
      sampler.SampleOnce(t0 + absl::Seconds(++s));
      samples_read += top_reads() - reads_[cpu_time] > before;
    }
    EXPECT_EQ(samples_read, 2);
    EXPECT_EQ(reads_[memory_psi], 1 + 2);
    EXPECT_EQ(reads_[cpu_time] - cpu_times_before,
              layout == kV1WithCpuMirror ? 2 * int(kFullReadEvery) - 2 : 0);
    // Quiet on its turns too: its usage read, its memory.stat not again (the first sample's).
    const std::string usage = "memory usage " + top, stats = "memory " + top;
    EXPECT_EQ(reads_[usage], 2);
    EXPECT_EQ(reads_[stats], 1);
    // Read in full once kQuietFullReadEvery samples have passed since, on its next turn.
    for (int i = 0; i < int(kQuietFullReadEvery); i++) sampler.SampleOnce(t0 + absl::Seconds(++s));
    EXPECT_EQ(reads_[stats], 2);
    EXPECT_EQ(reads_[usage], 2 + int(kQuietFullReadEvery / kFullReadEvery) - 1)
        << "a turn each, but the one read in full";

    // One sample off the top's round with `tasks` said to have run: whether it was read.
    auto read_when_ran = [&](std::optional<std::vector<uint64_t>> tasks, bool cpu_moves = false) {
      if ((id[top] + s + 1) % kFullReadEvery == 0) sampler.SampleOnce(t0 + absl::Seconds(++s));
      ran = std::move(tasks);
      if (cpu_moves) cpu_.usage_ns = *cpu_.usage_ns + 1000000;
      const int before = reads_[memory_psi];
      sampler.SampleOnce(t0 + absl::Seconds(++s));
      ran = std::vector<uint64_t>{};
      return reads_[memory_psi] > before;
    };
    const std::vector<uint64_t> elsewhere = {id["/stagewatch/snapshot-serve"], id["/stagewatch"],
                                             id["/"]};
    EXPECT_FALSE(read_when_ran(elsewhere)) << "another top, an ancestor and the root";
    EXPECT_TRUE(read_when_ran(std::vector<uint64_t>{id[top + "/run_1"]})) << "beneath it";
    EXPECT_TRUE(read_when_ran(std::vector<uint64_t>{id[top]})) << "in it";
    // Where the probe cannot tell, the top's CPU time does, if it has one.
    const std::vector<uint64_t> unknown = {id["/"], id[top] + 1000000};
    EXPECT_EQ(read_when_ran(unknown), layout == kV1MemoryOnly)
        << "in a cgroup the sampler does not know";
    EXPECT_EQ(read_when_ran(std::nullopt), layout == kV1MemoryOnly) << "the probe cannot tell";
    EXPECT_TRUE(read_when_ran(unknown, /*cpu_moves=*/true));
    EXPECT_TRUE(read_when_ran(std::nullopt, /*cpu_moves=*/true));
    std::filesystem::remove(root_ + top + "/run_1");
    std::filesystem::remove(root_ + "/stagewatch/snapshot-serve");
  }
}

// The task-state tracker skips its pass while this count stands still (task_states_tracker.h).
TEST_F(SampleSnapshotTest, ItCountsTheSamplesInWhichAStagesTaskRanOrThatCouldNotTell) {
  const std::string top = kTop;
  std::filesystem::create_directories(root_ + top + "/run_1");
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  std::optional<std::vector<uint64_t>> ran = std::vector<uint64_t>{};
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader());
  sampler.OnTasksRanTraced([&ran] { return ran; });
  Serve(1);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  int s = 0;
  sampler.SampleOnce(t0);
  std::map<std::string, uint64_t> id;
  for (const NamedCgroup& c : *namer.Live()) id[c.path] = c.id;
  ASSERT_TRUE(id.contains(top + "/run_1") && id.contains("/stagewatch") && id.contains("/"));
  auto counted = [&](std::optional<std::vector<uint64_t>> tasks) {
    ran = std::move(tasks);
    const uint64_t before = sampler.Latest()->samples_a_stage_ran;
    sampler.SampleOnce(t0 + absl::Seconds(++s));
    return sampler.Latest()->samples_a_stage_ran - before;
  };
  EXPECT_EQ(counted(std::vector<uint64_t>{}), 0u);
  EXPECT_EQ(counted(std::vector<uint64_t>{id["/stagewatch"], id["/"]}), 0u) << "no stage's";
  EXPECT_EQ(counted(std::vector<uint64_t>{id[top + "/run_1"]}), 1u) << "beneath a stage top";
  EXPECT_EQ(counted(std::nullopt), 1u) << "the probe cannot tell";
  EXPECT_EQ(counted(std::vector<uint64_t>{}), 0u);
}

// The per-stage state drops a forgotten stage in the very sample that forgets it (the only
// sample whose known stages changed), though the cgroups did not change in that sample.
TEST_F(SampleSnapshotTest, AForgottenStageLeavesTheSnapshotAndTheDetectorsAtOnce) {
  absl::Time now = absl::FromUnixSeconds(5000);
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{.forget_after = absl::Seconds(5)});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration(), [&now] { return now; });
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader());
  AnomalyEngine engine(AnomalyConfig{}, [](const AnomalyChange&) {});
  AnomalyFeeder feeder(&engine, &stages, {});
  auto sample = [&](absl::Duration after) {
    now += after;
    sampler.SampleOnce(now);
    feeder.Feed(now, *sampler.Latest());
    return sampler.Latest();
  };
  Serve(1);
  sample(absl::ZeroDuration());
  Serve(2);
  std::shared_ptr<const Snapshot> s = sample(absl::Seconds(1));
  ASSERT_EQ(s->memory.size(), 1u);
  const StageId train = s->memory.begin()->first;
  ASSERT_TRUE(s->pressure.contains(train) && s->cpu.contains(train));
  ASSERT_TRUE(engine.Snapshot().contains(train));

  std::filesystem::remove(root_ + kTop);
  s = sample(absl::Seconds(1));  // gone, not yet forgotten: its totals stay
  EXPECT_TRUE(s->memory.contains(train) && s->memory.at(train).domains.empty());
  EXPECT_TRUE(s->pressure.contains(train) && s->cpu.contains(train));
  s = sample(absl::Seconds(1));  // the cgroups did not change since
  EXPECT_TRUE(s->pressure.contains(train));

  s = sample(absl::Seconds(5));  // forgotten here
  EXPECT_FALSE(stages.KnownStageIds()->contains(train));
  EXPECT_FALSE(s->memory.contains(train));
  EXPECT_FALSE(s->pressure.contains(train));
  EXPECT_FALSE(s->cpu.contains(train));
  EXPECT_FALSE(engine.Snapshot().contains(train));
}

// A snapshot no reader holds any longer is the next sample's to write over; one a reader holds
// stays as it was for as long as it holds it.
TEST_F(SampleSnapshotTest, AHeldSnapshotStaysAsItWasAndOneNoOneHoldsIsWrittenOver) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SampleReader reader = Reader();
  uint64_t usage = 100 << 20;
  reader.stats = [&](const NamedCgroup&) -> absl::StatusOr<MemoryCgroupStats> {
    return MemoryCgroupStats{.usage_bytes = usage, .working_set_bytes = usage};
  };
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
  Serve(1);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  const StageId id = stages.Resolve(kTop).id;
  auto sample = [&](int s) {  // a task runs in it: read at every sample
    cpu_.usage_ns = *cpu_.usage_ns + 1000000;
    usage += 1 << 20;
    sampler.SampleOnce(t0 + absl::Seconds(s));
  };
  sample(0);
  const Snapshot* first = sampler.Latest().get();
  sample(1);
  sample(2);
  EXPECT_EQ(sampler.Latest().get(), first) << "the first, held by no one, written over";
  EXPECT_EQ(sampler.Latest()->memory.at(id).usage_bytes, usage);
  EXPECT_EQ(sampler.Latest()->taken, t0 + absl::Seconds(2));

  const std::shared_ptr<const Snapshot> held = sampler.Latest();
  const uint64_t held_usage = usage;
  for (int s = 3; s <= 6; s++) {
    sample(s);
    EXPECT_NE(sampler.Latest().get(), held.get());
  }
  EXPECT_EQ(held->taken, t0 + absl::Seconds(2));
  EXPECT_EQ(held->memory.at(id).usage_bytes, held_usage);
  EXPECT_EQ(held->memory.at(id).domains.at(0).usage_bytes, held_usage);
  EXPECT_EQ(sampler.Latest()->memory.at(id).usage_bytes, usage);
}

// A top whose memory files could not be read for a sample keeps what its memory.events counted:
// the next read adds only what it counted since, not all of it again; a top that went keeps its
// counts in its stage's.
TEST_F(SampleSnapshotTest, ATopReadFailingForASampleCountsItsMemoryEventsOnce) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SampleReader reader = Reader();
  bool fail = false;
  uint64_t max_hits = 3;
  reader.stats = [&](const NamedCgroup&) -> absl::StatusOr<MemoryCgroupStats> {
    if (fail) return absl::UnavailableError("read failed");
    MemoryCgroupStats m;
    m.usage_bytes = m.working_set_bytes = 100 << 20;
    m.events = {{"max", max_hits}, {"oom_kill", 1}};
    return m;
  };
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
  Serve(1);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  const StageId id = stages.Resolve(kTop).id;
  auto events = [&] { return sampler.Latest()->memory.at(id).events; };
  auto sample = [&](int s) {  // a task runs in it: read at every sample
    cpu_.usage_ns = *cpu_.usage_ns + 1000000;
    sampler.SampleOnce(t0 + absl::Seconds(s));
  };
  const size_t max = 2, oom_kill = 4;  // kMemoryEvents' places
  sample(0);
  ASSERT_EQ(events()[max], 3u);
  max_hits = 5;
  sample(1);
  ASSERT_EQ(events()[max], 5u);
  fail = true;
  sample(2);
  fail = false;
  max_hits = 6;
  sample(3);
  EXPECT_EQ(events()[max], 6u);
  EXPECT_EQ(events()[oom_kill], 1u);

  std::filesystem::remove(root_ + kTop);
  sample(4);
  EXPECT_EQ(events()[max], 6u) << "a top gone keeps its counts in its stage's";
  EXPECT_EQ(events()[oom_kill], 1u);
}

// Likewise its pressure and cpu.stat: a file that exists but could not be read for a sample
// keeps the top's last totals, not zeros (a restart, whose next read would count it all again).
TEST_F(SampleSnapshotTest, ATopsPressureOrCpuReadFailingForASampleCountsOnce) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SampleReader reader = Reader();
  bool psi_fails = false, cpu_fails = false;
  reader.pressure = [&, served = reader.pressure](const NamedCgroup& top,
                                                  std::string_view resource) {
    return psi_fails ? absl::StatusOr<PsiTotals>(absl::UnavailableError("read failed"))
                     : served(top, resource);
  };
  reader.cpu = [&, served = reader.cpu](const NamedCgroup& top) {
    return cpu_fails ? absl::StatusOr<CpuCgroupStats>(absl::UnavailableError("read failed"))
                     : served(top);
  };
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, reader);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  const StageId id = stages.Resolve(kTop).id;
  Serve(1);
  sampler.SampleOnce(t0);
  auto memory_some = [&] { return sampler.Latest()->pressure.at(id).memory_some_us; };
  auto cpu_time = [&] { return sampler.Latest()->cpu.at(id).usage_ns; };
  Serve(2);
  sampler.SampleOnce(t0 + absl::Seconds(1));
  ASSERT_EQ(memory_some(), 6000000u);
  ASSERT_EQ(cpu_time(), 14000000000u);

  psi_fails = true;
  Serve(3);
  sampler.SampleOnce(t0 + absl::Seconds(2));
  psi_fails = false;
  Serve(4);
  sampler.SampleOnce(t0 + absl::Seconds(3));
  EXPECT_EQ(memory_some(), 12000000u);
  EXPECT_EQ(sampler.Latest()->pressure.at(id).io_some_us, 2000000u);

  cpu_fails = true;
  Serve(5);
  sampler.SampleOnce(t0 + absl::Seconds(4));
  EXPECT_FALSE(sampler.Latest()->cpu_error.ok()) << "told, as before";
  cpu_fails = false;
  Serve(6);
  sampler.SampleOnce(t0 + absl::Seconds(5));
  EXPECT_EQ(cpu_time(), 42000000000u);
  EXPECT_EQ(sampler.Latest()->cpu.at(id).periods, 240u);
  EXPECT_EQ(memory_some(), 18000000u);
}

// While the probe traces the kernel's kills, a kill no event told is one its ring buffer
// dropped: every cgroup's count is read at the next sample after a drop, else every 10 minutes.
TEST_F(SampleSnapshotTest, TracedKillsLeaveTheCountsToDroppedEventsAndASlowNet) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader(), kMemoryPart | kOomPart);
  Serve(1);
  auto oom_reads = [this] { return ReadsOf("oom_kill "); };
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  oom_kills_ = 2;
  sampler.ReadOomBaseline(t0);
  uint64_t dropped = 0;
  sampler.OnOomKillsTraced([&dropped] { return dropped; });
  const int per_pass = oom_reads();
  ASSERT_GE(per_pass, 2);
  const StageId id = stages.Resolve(kTop).id;

  oom_kills_ = 3;  // a kill whose event was not dropped cannot go untold: no reading a minute
  for (int s = 1; s <= 120; s++) sampler.SampleOnce(t0 + absl::Seconds(s));
  EXPECT_EQ(oom_reads(), per_pass);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 0u);

  dropped = 1;  // its event was dropped after all: read at the next sample, once
  sampler.SampleOnce(t0 + absl::Seconds(121));
  EXPECT_EQ(oom_reads(), 2 * per_pass);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 1u);
  sampler.SampleOnce(t0 + absl::Seconds(122));
  EXPECT_EQ(oom_reads(), 2 * per_pass);

  oom_kills_ = 4;  // the net, kOomCountsTracedInterval after the last reading
  sampler.SampleOnce(t0 + absl::Seconds(121) + kOomCountsTracedInterval - absl::Seconds(1));
  EXPECT_EQ(oom_reads(), 2 * per_pass);
  sampler.SampleOnce(t0 + absl::Seconds(121) + kOomCountsTracedInterval);
  EXPECT_EQ(oom_reads(), 3 * per_pass);
  EXPECT_EQ(sampler.Latest()->oom_kills.at(id), 2u);
}

// The baseline is read before the OOM probe attaches (the agent's start), so a kill between
// then and the first sample is news, not baseline.
TEST_F(SampleSnapshotTest, AKillBeforeTheFirstSampleCountsAgainstTheBaselineTakenAtStart) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, layout_, MemoryConfig{}, Reader(), kMemoryPart | kOomPart);
  Serve(1);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  oom_kills_ = 2;
  sampler.ReadOomBaseline(t0);
  const std::string file = "oom_kill " + std::string(kTop);
  EXPECT_EQ(reads_[file], 1);

  uint64_t top_id = 0;
  for (const NamedCgroup& c : *namer.Live()) top_id = c.path == kTop ? c.id : top_id;
  oom_kills_ = 3;
  sampler.OnOomKill(t0 + absl::Milliseconds(100), top_id);
  sampler.ReadVictims(t0 + absl::Milliseconds(100));
  sampler.SampleOnce(t0 + absl::Milliseconds(500));
  EXPECT_EQ(sampler.Latest()->oom_kills.at(stages.Resolve(kTop).id), 1u);
}

TEST(OpenCgroupFilesTest, KeepsOneDescriptorPerFileAndRereadsFromTheStart) {
  char tmpl[] = "/tmp/stagewatch-openfiles-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string file = dir + "/cpu.stat";
  std::ofstream(file) << "usage_usec 100\n";
  OpenCgroupFiles files;
  EXPECT_EQ(*files.Read(7, file), "usage_usec 100\n");
  std::ofstream(file) << "usage_usec 2000\n";  // rewritten in place, as cgroupfs files are
  EXPECT_EQ(*files.Read(7, file), "usage_usec 2000\n");
  std::ofstream(file) << "usage_usec 3\n";  // shorter: nothing of the old text is left
  EXPECT_EQ(*files.Read(7, file), "usage_usec 3\n");
  EXPECT_EQ(files.opens(), 1u);
  EXPECT_EQ(files.open_files(), 1u);

  files.Retain({8});  // cgroup 7 was removed: its file closes
  EXPECT_EQ(files.open_files(), 0u);
  std::filesystem::remove(file);
  absl::StatusOr<std::string> gone = files.Read(7, file);
  EXPECT_TRUE(absl::IsNotFound(gone.status())) << gone.status();
  EXPECT_EQ(files.open_files(), 0u);
  EXPECT_EQ(files.opens(), 2u);
  std::filesystem::remove_all(dir);
}

TEST(OpenCgroupFilesTest, AMissingFileIsLookedForAgainAfterDoublingGapsAndFoundOnceMade) {
  char tmpl[] = "/tmp/stagewatch-openfiles-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string file = dir + "/cpu.stat";
  OpenCgroupFiles files;
  // Reads 1..11 with the file missing open it at 1, 3, 6 and 11 (gaps of 1, 2 and 4 skips).
  std::vector<uint64_t> opens_after;
  for (int read = 1; read <= 11; read++) {
    absl::StatusOr<std::string> missing = files.Read(7, file);
    EXPECT_TRUE(absl::IsNotFound(missing.status())) << read << ": " << missing.status();
    opens_after.push_back(files.opens());
  }
  EXPECT_EQ(opens_after, (std::vector<uint64_t>{1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 4}));

  std::ofstream(file) << "usage_usec 5\n";  // the mirror is made: found at the next open
  int reads_until_found = 0;
  absl::StatusOr<std::string> found;
  do {
    found = files.Read(7, file);
    reads_until_found++;
  } while (!found.ok() && reads_until_found < 2 * OpenCgroupFiles::kMaxMissingSkips);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, "usage_usec 5\n");
  EXPECT_LE(reads_until_found, 9);  // 8 skips were due after the open at read 11
  EXPECT_EQ(files.open_files(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stagewatch
