// The memory sampler's limit domains, on a directory tree standing in for a v1 memory
// hierarchy and a reader that serves fixed figures and counts its reads.
#include <filesystem>
#include <fstream>
#include <set>

#include "anomaly/anomaly_engine.h"
#include "anomaly/anomaly_feeder.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "exporters/metrics/memory_collector.h"
#include "gtest/gtest.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Stages discovered from a directory tree, named as the agent names them.
struct Naming {
  explicit Naming(const std::string& root) : paths(root) {}
  CgroupPathCache paths;
  StageResolver stages{{}, DiscoveryConfig{}};
  CgroupNamer namer{&paths, &stages, absl::ZeroDuration()};
  StageId Id(const char* path) { return stages.Resolve(path).id; }
};

// The stage's count of one of kMemoryEvents.
uint64_t Event(const StageMemory& m, std::string_view name) {
  for (size_t i = 0; i < kMemoryEvents.size(); i++) {
    if (kMemoryEvents[i] == name) return m.events[i];
  }
  return uint64_t{999};
}

class LimitDomainsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-domains-XXXXXX";
    root_ = mkdtemp(tmpl);
    for (const char* p : {kTop, kRun7, kRun8}) std::filesystem::create_directories(root_ + p);
    layout_.mode = CgroupMode::kHybrid;
    layout_.key = CGROUP_KEY_V1_MEMORY;  // v1: failcnt and oom_kill are per cgroup
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // A cgroup's figures as the reader serves them; limit none = unlimited.
  void Set(const std::string& path, uint64_t usage, std::optional<uint64_t> limit,
           std::map<std::string, uint64_t> events = {}) {
    MemoryCgroupStats& m = stats_[path];
    m.usage_bytes = usage;
    m.working_set_bytes = usage;
    m.limit_bytes = limit;
    m.events = std::move(events);
  }

  // An unlimited top, run-7 at 22% of its limit, run-8 at 91% of its own.
  void SetRun8NearItsLimit() {
    Set(kTop, 100 * kMiB, std::nullopt);
    Set(kRun7, 90 * kMiB, 400 * kMiB);
    Set(kRun8, 10 * kMiB, 11 * kMiB);
  }

  SampleReader Reader() {
    return {
        .stats = [this](const NamedCgroup& c) -> absl::StatusOr<MemoryCgroupStats> {
          const std::string& path = c.path;
          stats_reads_[path]++;
          if (broken_.contains(path)) return absl::InvalidArgumentError(path + ": not a number");
          auto it = stats_.find(path);
          if (it == stats_.end()) return absl::NotFoundError(path);
          return it->second;
        },
        .limit = [this](const std::string& path) -> absl::StatusOr<std::optional<uint64_t>> {
          limit_reads_[path]++;
          if (limit_broken_.contains(path)) return absl::InvalidArgumentError(path + ": garbled");
          auto it = stats_.find(path);
          if (it == stats_.end()) return absl::NotFoundError(path);
          return it->second.limit_bytes;
        },
    };
  }

  static constexpr const char* kTop = "/stagewatch/validate";
  static constexpr const char* kRun7 = "/stagewatch/validate/run-7";
  static constexpr const char* kRun8 = "/stagewatch/validate/run-8";
  std::string root_;
  CgroupLayout layout_;
  std::map<std::string, MemoryCgroupStats> stats_;
  std::set<std::string> broken_, limit_broken_;
  std::map<std::string, int> stats_reads_, limit_reads_;
};

TEST_F(LimitDomainsTest, AChildsLimitBeneathAnUnlimitedTopIsTheStagesLimit) {
  Set(kTop, 390 * kMiB, std::nullopt);
  Set(kRun7, 380 * kMiB, 400 * kMiB);
  Set(kRun8, 10 * kMiB, std::nullopt);
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());

  const absl::Time t0 = absl::FromUnixSeconds(1000);
  sampler.SampleOnce(t0);
  sampler.SampleOnce(t0 + absl::Seconds(1));
  sampler.SampleOnce(t0 + absl::Seconds(3));
  const StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(m.limit_bytes, 400 * kMiB);
  EXPECT_EQ(m.headroom_bytes, 20 * kMiB);
  ASSERT_EQ(m.domains.size(), 2u);
  for (const DomainMemory& d : m.domains) {
    EXPECT_TRUE(d.sampled);
    EXPECT_EQ(d.working_set_bytes, d.top ? 390 * kMiB : 380 * kMiB) << d.path;
    EXPECT_EQ(d.path, d.top ? kTop : kRun7);
  }
  EXPECT_EQ(m.usage_bytes, 390 * kMiB);  // the stage's usage stays its top's
  EXPECT_EQ(m.limit_domains, 2u);        // the top and run-7; run-8 has no limit
  EXPECT_TRUE(m.near_limit);             // 95% of run-7's limit
  EXPECT_DOUBLE_EQ(m.near_limit_seconds, 3.0);
  // Each sample reads the stats of the two domains once; run-7's limit was checked once, at the
  // first sample, and comes with its stats after.
  EXPECT_EQ(stats_reads_[kTop], 3);
  EXPECT_EQ(stats_reads_[kRun7], 3);
  EXPECT_EQ(stats_reads_.count(kRun8), 0u);
  EXPECT_EQ(limit_reads_[kRun7], 1);
  EXPECT_GE(limit_reads_[kRun8], 1);
  EXPECT_EQ(limit_reads_.count(kTop), 0u);
}

TEST_F(LimitDomainsTest, TwoLimitedChildrenTheOneCloserToItsLimitGivesLimitAndHeadroom) {
  Set(kTop, 1000 * kMiB, std::nullopt);
  Set(kRun7, 100 * kMiB, 256 * kMiB);    // 39% of its limit, 156 MiB left
  Set(kRun8, 900 * kMiB, 1024 * kMiB);   // 88%, 124 MiB left
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(m.limit_bytes, 1024 * kMiB);
  EXPECT_EQ(m.headroom_bytes, 124 * kMiB);
  EXPECT_FALSE(m.near_limit);

  Set(kRun7, 250 * kMiB, 256 * kMiB);  // now run-7 is the closer one
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(m.limit_bytes, 256 * kMiB);
  EXPECT_EQ(m.headroom_bytes, 6 * kMiB);
  EXPECT_TRUE(m.near_limit);
  EXPECT_EQ(m.limit_domains, 3u);
}

TEST_F(LimitDomainsTest, V1CountersOfEachDomainAreSummedOnce) {
  Set(kTop, 100 * kMiB, std::nullopt, {{"failcnt", 0}, {"oom_kill", 0}});
  Set(kRun7, 90 * kMiB, 400 * kMiB, {{"failcnt", 39}, {"oom_kill", 1}});
  Set(kRun8, 10 * kMiB, 20 * kMiB, {{"failcnt", 3}, {"oom_kill", 0}});
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  const StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(Event(m, "failcnt"), 42u);
  EXPECT_EQ(Event(m, "oom_kill"), 1u);
  // Each domain carries its own, for a run whose cgroup it is.
  std::map<std::string, std::optional<uint64_t>> failcnts;
  for (const DomainMemory& d : m.domains) failcnts[d.path] = d.failcnt;
  EXPECT_EQ(failcnts, (std::map<std::string, std::optional<uint64_t>>{
                          {kTop, 0}, {kRun7, 39}, {kRun8, 3}}));
}

TEST_F(LimitDomainsTest, AMalformedDomainIsSkippedAndCountedAndTheRestGoOn) {
  SetRun8NearItsLimit();
  broken_.insert(kRun8);
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(sampler.domain_skips(), 1u);
  EXPECT_EQ(m.limit_bytes, 400 * kMiB);  // run-8 (91% of its limit) sat this sample out
  EXPECT_EQ(m.limit_domains, 2u);

  broken_.clear();
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(m.limit_bytes, 11 * kMiB);
  EXPECT_EQ(sampler.domain_skips(), 1u);
}

// The "read" errors counter as a scrape of the collector shows it.
double ReadErrors(MemorySampler* sampler, Naming* naming);

TEST_F(LimitDomainsTest, ADomainWhoseStatsVanishMidSampleIsSkippedAndCountedAndTheRestGoOn) {
  SetRun8NearItsLimit();
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  EXPECT_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).limit_bytes, 11 * kMiB);
  EXPECT_EQ(ReadErrors(&sampler, &naming), 0);

  // run-8's files go between the refresh and its read (its directory is still listed).
  const MemoryCgroupStats run8 = stats_.at(kRun8);
  stats_.erase(kRun8);
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(sampler.domain_skips(), 1u);
  EXPECT_EQ(m.limit_bytes, 400 * kMiB);  // run-7 gives the stage's limit this sample
  EXPECT_EQ(m.usage_bytes, 100 * kMiB);
  EXPECT_EQ(ReadErrors(&sampler, &naming), 1);

  // Still a domain: once its files read again it is the closest to its limit again.
  stats_[kRun8] = run8;
  sampler.SampleOnce(absl::FromUnixSeconds(1002));
  m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(m.limit_bytes, 11 * kMiB);
  EXPECT_EQ(m.limit_domains, 3u);
  EXPECT_EQ(ReadErrors(&sampler, &naming), 1);
}

TEST_F(LimitDomainsTest, AChildWhoseLimitCannotBeReadIsSkippedAndCountedAndTheRestGoOn) {
  SetRun8NearItsLimit();
  limit_broken_.insert(kRun8);
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  const StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(sampler.domain_skips(), 1u);
  EXPECT_EQ(m.limit_bytes, 400 * kMiB);  // run-8 is not a domain: its limit was not read
  EXPECT_EQ(m.limit_domains, 2u);
  EXPECT_EQ(m.usage_bytes, 100 * kMiB);
  EXPECT_EQ(stats_reads_.count(kRun8), 0u);
  EXPECT_EQ(ReadErrors(&sampler, &naming), 1);
}

TEST_F(LimitDomainsTest, AV2ChildWithOnlyMemoryHighIsADomainLimitedByIt) {
  // A v2 tree read through cgroupfs files, not the fake reader.
  CgroupLayout v2;
  v2.mode = CgroupMode::kV2;
  v2.key = CGROUP_KEY_DEFAULT;
  v2.key_root = v2.v2_root = root_;
  v2.v2_has_memory = true;
  auto write = [this](const char* cgroup, const char* file, const std::string& text) {
    std::ofstream(root_ + cgroup + "/" + file) << text << "\n";
  };
  for (const char* c : {kTop, kRun7, kRun8}) {
    write(c, "memory.max", "max");
    write(c, "memory.high", "max");
    write(c, "memory.stat", "anon 0\nfile 0\ninactive_file 0");
  }
  write(kTop, "memory.current", std::to_string(300 * kMiB));
  write(kRun7, "memory.current", std::to_string(200 * kMiB));
  write(kRun7, "memory.high", std::to_string(256 * kMiB));  // its only limit
  write(kRun7, "memory.peak", std::to_string(230 * kMiB));
  write(kRun7, "memory.events", "low 0\nhigh 12\nmax 3\noom 0\noom_kill 0");
  write(kRun8, "memory.current", std::to_string(50 * kMiB));
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, v2, MemoryConfig{}, SampleReader{});
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  const StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  EXPECT_EQ(sampler.domain_skips(), 0u);
  EXPECT_EQ(m.limit_domains, 2u);  // the top and run-7; run-8 has neither file set
  EXPECT_EQ(m.limit_bytes, 256 * kMiB);
  EXPECT_EQ(m.headroom_bytes, 56 * kMiB);
  ASSERT_EQ(m.domains.size(), 2u);
  for (const DomainMemory& d : m.domains) EXPECT_EQ(d.path, d.top ? kTop : kRun7);
  // run-7's own files, as a run whose cgroup it is takes them: the kernel's peak, and the hits
  // of memory.max among its events.
  const DomainMemory& run7 = m.domains[0].top ? m.domains[1] : m.domains[0];
  EXPECT_EQ(run7.peak_bytes, 230 * kMiB);
  EXPECT_EQ(run7.failcnt, 3u);
}

TEST_F(LimitDomainsTest, DomainsBeyondTheBoundAreCountedNotWatched) {
  Set(kTop, 100 * kMiB, std::nullopt);
  Set(kRun7, 90 * kMiB, 400 * kMiB);
  Set(kRun8, 10 * kMiB, 20 * kMiB);
  Naming naming(root_);
  MemoryConfig config;
  config.max_limit_domains = 2;
  MemorySampler sampler(&naming.namer, layout_, config, Reader());
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  EXPECT_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).limit_domains, 2u);
  EXPECT_EQ(sampler.domain_overflows(), 1u);
}

TEST_F(LimitDomainsTest, LimitsAreCheckedAtBirthAndOnASlowerRoundNotEverySample) {
  Set(kTop, 100 * kMiB, std::nullopt);
  Set(kRun7, 10 * kMiB, std::nullopt);
  Set(kRun8, 10 * kMiB, std::nullopt);
  constexpr int kIdle = 100;  // unlimited cgroups that are not domains
  for (int i = 0; i < kIdle; i++) {
    const std::string path = std::string(kTop) + "/idle-" + std::to_string(i);
    std::filesystem::create_directories(root_ + path);
    Set(path, kMiB, std::nullopt);
  }
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int sample = 0;
  auto next = [&] { sampler.SampleOnce(t0 + absl::Seconds(sample++)); };
  auto limit_reads = [&] {
    int n = 0;
    for (const auto& [path, reads] : limit_reads_) n += reads;
    return n;
  };
  auto domains = [&] { return sampler.Latest()->memory.at(naming.Id(kTop)).limit_domains; };

  next();  // the first sample checks every cgroup once
  EXPECT_EQ(limit_reads(), kIdle + 2);
  // Then one round of kLimitRecheckSamples samples checks each cgroup once more, spread.
  const int before = limit_reads();
  for (uint64_t i = 0; i < kLimitRecheckSamples; i++) next();
  EXPECT_EQ(limit_reads() - before, kIdle + 2);
  EXPECT_EQ(stats_reads_[kTop], sample);  // only the domain's stats are read every sample
  EXPECT_EQ(stats_reads_.count(kRun7), 0u);
  EXPECT_EQ(domains(), 1u);

  // A cgroup born now whose launcher writes its limit two samples after the mkdir.
  const std::string run9 = std::string(kTop) + "/run-9";
  std::filesystem::create_directories(root_ + run9);
  Set(run9, 50 * kMiB, std::nullopt);
  next();
  next();
  EXPECT_EQ(domains(), 1u);
  Set(run9, 50 * kMiB, 64 * kMiB);
  next();
  EXPECT_EQ(domains(), 2u);
  EXPECT_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).limit_bytes, 64 * kMiB);

  // A limit written on a cgroup long after its birth is found by the slower round.
  Set(kRun8, 10 * kMiB, 16 * kMiB);
  int waited = 0;
  while (domains() < 3 && waited < static_cast<int>(kLimitRecheckSamples)) {
    next();
    waited++;
  }
  EXPECT_EQ(domains(), 3u) << "not found in " << waited << " samples";

  // A lifted limit ends the domain at once; a removed cgroup is forgotten.
  Set(kRun8, 10 * kMiB, std::nullopt);
  std::filesystem::remove(root_ + run9);
  next();
  EXPECT_EQ(domains(), 1u);
  EXPECT_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).domains.size(), 1u);
}

// The limit ETA each domain would give alone, from a sampler fed to the engine.
TEST_F(LimitDomainsTest, TwoDomainsClimbingAtDifferentSpeedsEachGetTheirOwnEta) {
  // run-7 sits closest to its limit (96%) but creeps; run-8 is further (75%) but races.
  auto run7 = [](int i) { return 240 * kMiB + i * kMiB / 10; };  // 0.1 MiB/s to 256 MiB
  auto run8 = [](int i) { return 300 * kMiB + i * 8 * kMiB; };   // 8 MiB/s to 1 GiB
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  AnomalyConfig config;
  config.limit_eta.warmup = absl::Seconds(20);
  config.limit_eta.threshold = absl::Seconds(60);  // run-8's ETA is under it, run-7's is not
  std::vector<AnomalyChange> changes;
  AnomalyEngine engine(config, [&](const AnomalyChange& c) {
    if (c.rule == AnomalyRule::kLimitEta) changes.push_back(c);
  });
  AnomalyFeeder feeder(&engine, &naming.stages, {});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  auto sample = [&](int i) {
    sampler.SampleOnce(t0 + absl::Seconds(i));
    feeder.Feed(t0 + absl::Seconds(i), *sampler.Latest());
  };
  int i = 0;
  for (; i < 60; i++) {
    Set(kRun7, run7(i), 256 * kMiB);
    Set(kRun8, run8(i), 1024 * kMiB);
    Set(kTop, run7(i) + run8(i), std::nullopt);
    sample(i);
  }
  const int last = i - 1;
  // The stage's ETA is the smaller: run-8's, though run-7 gives the stage's limit and headroom.
  EXPECT_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).limit_bytes, 256 * kMiB);
  const double eta8 = double(1024 * kMiB - run8(last)) / (8 * kMiB);
  const double eta7 = double(256 * kMiB - run7(last)) / (kMiB / 10.0);
  ASSERT_TRUE(engine.Snapshot().at(naming.Id(kTop)).limit_eta_seconds.has_value());
  EXPECT_NEAR(*engine.Snapshot().at(naming.Id(kTop)).limit_eta_seconds, eta8, 0.5);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].active);
  EXPECT_EQ(changes[0].stage.name, "validate");
  EXPECT_NE(changes[0].summary.find(kRun8), std::string::npos) << changes[0].summary;

  // run-8 goes: its detectors go with it, the ETA is run-7's own and the anomaly ends.
  std::filesystem::remove(root_ + kRun8);
  stats_.erase(kRun8);
  Set(kRun7, run7(i), 256 * kMiB);
  Set(kTop, run7(i), std::nullopt);
  sample(i);
  ASSERT_TRUE(engine.Snapshot().at(naming.Id(kTop)).limit_eta_seconds.has_value());
  EXPECT_NEAR(*engine.Snapshot().at(naming.Id(kTop)).limit_eta_seconds, eta7 - 1, 1.0);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_FALSE(changes[1].active);
}

double Value(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name != name || f.metric.empty()) continue;
    const auto& m = f.metric[0];
    return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return -1;
}

double ReadErrors(MemorySampler* sampler, Naming* naming) {
  exporters::MemoryCollector collector(
      {.sampler = sampler, .namer = &naming->namer});
  std::vector<prometheus::MetricFamily> families;
  if (!collector.Collect(&families).ok()) return -1;
  for (const auto& f : families) {
    if (f.name != "stagewatch_memory_limit_domain_errors_total") continue;
    for (const auto& m : f.metric) {
      for (const auto& label : m.label) {
        if (label.name == "reason" && label.value == "read") return m.counter.value;
      }
    }
  }
  return -1;
}

TEST_F(LimitDomainsTest, TheScrapeAndTheDetectorsSeeOneSnapshotReadOncePerInterval) {
  Set(kTop, 200 * kMiB, std::nullopt);
  Set(kRun7, 200 * kMiB, 400 * kMiB);
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  AnomalyEngine engine(AnomalyConfig{}, [](const AnomalyChange&) {});
  AnomalyFeeder feeder(&engine, &naming.stages, {});
  exporters::MemoryCollector collector(
      {.sampler = &sampler, .namer = &naming.namer});

  // run-7 grows 2 MiB/s towards its 400 MiB limit; the top is unlimited.
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  absl::Time now = t0;
  for (int i = 0; i <= 60; i++) {
    now = t0 + absl::Seconds(i);
    Set(kRun7, (200 + 2 * i) * kMiB, 400 * kMiB);
    Set(kTop, (200 + 2 * i) * kMiB, std::nullopt);
    sampler.SampleOnce(now);
    feeder.Feed(now, *sampler.Latest());
  }
  const int reads = stats_reads_[kRun7] + limit_reads_[kRun7];
  std::vector<prometheus::MetricFamily> first, second;
  ASSERT_TRUE(collector.Collect(&first).ok());
  ASSERT_TRUE(collector.Collect(&second).ok());
  EXPECT_EQ(stats_reads_[kRun7] + limit_reads_[kRun7], reads);  // scrapes read no cgroup files
  EXPECT_EQ(stats_reads_[kRun7], 61);

  const StageMemory m = sampler.Latest()->memory.at(naming.Id(kTop));
  for (const auto* scrape : {&first, &second}) {
    EXPECT_EQ(Value(*scrape, "stagewatch_memory_limit_bytes"), 400.0 * kMiB);
    EXPECT_EQ(Value(*scrape, "stagewatch_memory_headroom_bytes"), double(*m.headroom_bytes));
    EXPECT_EQ(Value(*scrape, "stagewatch_memory_limit_domains"), 2);
  }
  EXPECT_EQ(*m.headroom_bytes, 80 * kMiB);
  // The limit ETA was fed run-7's figures: 80 MiB left at 2 MiB/s.
  const std::optional<double> eta = engine.Snapshot().at(naming.Id(kTop)).limit_eta_seconds;
  ASSERT_TRUE(eta.has_value());
  EXPECT_NEAR(*eta, 40.0, 0.5);
}

// Each sample's state holds until the next one: the time from a sample near the limit to the
// next sample is near-limit time, whatever the next one finds, and the time before the first
// sample near it is not. Uneven intervals tell the two sides apart.
TEST_F(LimitDomainsTest, NearLimitTimeRunsFromTheFirstSampleNearTheLimitToTheFirstAwayFromIt) {
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, Reader());
  exporters::MemoryCollector collector({.sampler = &sampler, .namer = &naming.namer});
  auto exported = [&] {
    std::vector<prometheus::MetricFamily> families;
    EXPECT_TRUE(collector.Collect(&families).ok());
    return Value(families, "stagewatch_memory_near_limit_seconds_total");
  };
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  // (seconds after t0, run-7's usage of its 400 MiB limit, near-limit seconds exported after)
  const struct {
    int at;
    uint64_t usage_mib;
    double near_seconds;
  } steps[] = {
      {0, 100, 0},   // 25%
      {5, 380, 0},   // 95%: near from here on
      {6, 390, 1},   // still near: the second since the last sample counts
      {10, 100, 5},  // away: the 4 s since the last sample (near) count, no more after
      {30, 100, 5},
      {31, 396, 5},  // near again: the 1 s before it does not count
      {33, 396, 7},
  };
  for (const auto& step : steps) {
    Set(kTop, step.usage_mib * kMiB, std::nullopt);
    Set(kRun7, step.usage_mib * kMiB, 400 * kMiB);
    sampler.SampleOnce(t0 + absl::Seconds(step.at));
    EXPECT_DOUBLE_EQ(sampler.Latest()->memory.at(naming.Id(kTop)).near_limit_seconds,
                     step.near_seconds)
        << "at " << step.at << " s";
    EXPECT_DOUBLE_EQ(exported(), step.near_seconds) << "at " << step.at << " s";
  }
}

TEST_F(LimitDomainsTest, AnIdleDomainIsReadInFullOnlyWhenItsUsageMovesOrEveryTenthSample) {
  Set(kTop, 100 * kMiB, std::nullopt);
  Set(kRun7, 90 * kMiB, 400 * kMiB, {{"failcnt", 3}});
  // Unlimited, and readable: its limit is checked again on the slower round, at the sample its
  // cgroup id (here an inode number) falls on, and a read that failed there would count as a
  // skip below.
  Set(kRun8, 10 * kMiB, std::nullopt);
  std::map<std::string, int> usage_reads;
  SampleReader reader = Reader();
  reader.usage = [&](const NamedCgroup& c) -> absl::StatusOr<uint64_t> {
    usage_reads[c.path]++;
    auto it = stats_.find(c.path);
    if (it == stats_.end()) return absl::NotFoundError(c.path);
    return it->second.usage_bytes;
  };
  Naming naming(root_);
  MemorySampler sampler(&naming.namer, layout_, MemoryConfig{}, reader);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  auto sample = [&](int i) {
    sampler.SampleOnce(t0 + absl::Seconds(i));
    return sampler.Latest()->memory.at(naming.Id(kTop));
  };

  // Nothing moves: one full read, then only the usage, until the tenth sample after it.
  sample(0);
  for (int i = 1; i < static_cast<int>(kFullReadEvery); i++) {
    const StageMemory m = sample(i);
    EXPECT_EQ(m.limit_bytes, 400 * kMiB) << i;  // the last full reading's figures
    EXPECT_EQ(Event(m, "failcnt"), 3u) << i;
    EXPECT_FALSE(m.near_limit) << i;
  }
  EXPECT_EQ(stats_reads_[kRun7], 1);
  EXPECT_EQ(stats_reads_[kTop], 1);
  EXPECT_EQ(usage_reads[kRun7], static_cast<int>(kFullReadEvery) - 1);
  sample(kFullReadEvery);
  EXPECT_EQ(stats_reads_[kRun7], 2);

  // run-7's usage moves: its stats are read in full that same sample, the idle top's are not.
  Set(kRun7, 380 * kMiB, 400 * kMiB, {{"failcnt", 9}});
  const StageMemory m = sample(kFullReadEvery + 1);
  EXPECT_EQ(stats_reads_[kRun7], 3);
  EXPECT_EQ(stats_reads_[kTop], 2);
  EXPECT_EQ(m.headroom_bytes, 20 * kMiB);
  EXPECT_EQ(Event(m, "failcnt"), 9u);
  EXPECT_TRUE(m.near_limit);

  // A usage that cannot be read is asked in full, and skipped when that fails too.
  stats_.erase(kRun7);
  const uint64_t skips = sampler.domain_skips();
  sample(kFullReadEvery + 2);
  EXPECT_EQ(stats_reads_[kRun7], 4);
  EXPECT_EQ(sampler.domain_skips(), skips + 1);
}

}  // namespace
}  // namespace stagewatch
