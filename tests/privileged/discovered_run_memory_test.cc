// A discovered run whose cgroup has its own memory limit, on the real hierarchy beneath the
// test's own cgroup: the run's sampler takes its memory files' figures (usage, peak, and on v2
// failcnt) from the memory sampler's snapshot (found by the cgroup id the run watcher gives
// it), reads two or three files fewer for it on v1 (three or four on v2), and records the limit
// the kernel's file holds, read with its other limits.
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "sampler/memory_sampler.h"
#include "runs/discovered_sampler.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

constexpr uint64_t kMiB = 1 << 20;

uint64_t FileNumber(const std::string& file) {
  uint64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(testing::ReadFile(file)), &v)) << file;
  return v;
}

TEST(DiscoveredRunMemoryTest, ALimitedRunsMemoryIsTheSamplersReadingAndItsLimitTheKernels) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup top("stagewatch/sw-disc-one-reader");
  TestCgroup run(top, "job_1");
  run.SetMemoryLimit(256 * kMiB);
  ASSERT_GT(run.SpawnJoined("sw-one-reader", [] {
    testing::TouchAnonymous(64 * kMiB);
    // Still growing, 12.5 MiB a second: a sample of its own files is a full reading (an idle
    // run's reads only its usage and CPU time), and the limit stays far off.
    for (;;) {
      testing::TouchAnonymous(256 << 10);
      usleep(20000);
    }
  }), 0);
  const bool v2 = top.v2();
  const std::string limit_file = run.dir() + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  ASSERT_TRUE(testing::WaitUntil([&] {
    return FileNumber(run.dir() + (v2 ? "/memory.current" : "/memory.usage_in_bytes")) >=
           64 * kMiB;
  }, 5000));

  CgroupPathCache paths(top.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler memory(&namer, top.layout(), MemoryConfig{}, SampleReader{});
  const absl::Time t0 = absl::Now();
  memory.SampleOnce(t0);
  const std::shared_ptr<const Snapshot> snapshot = memory.Latest();
  const DomainMemory* domain = nullptr;
  for (const DomainMemory& d : snapshot->memory.at(stages.Resolve(top.path()).id).domains) {
    if (d.id == run.id()) domain = &d;
  }
  ASSERT_NE(domain, nullptr) << "the run's cgroup is a limit domain";
  ASSERT_TRUE(domain->sampled);

  auto sampler = [&](bool with_snapshot) {
    DiscoveredSamplerOptions o{.layout = top.layout(), .reads_per_second = 1000};
    if (with_snapshot) o.latest_snapshot = [&memory] { return memory.Latest(); };
    auto s = std::make_unique<DiscoveredSampler>(o);
    s->Add("job_1", run.path(), run.id(), t0);
    s->Sample(t0 + absl::Milliseconds(100));
    return s;
  };
  std::unique_ptr<DiscoveredSampler> one_reader = sampler(true), own_files = sampler(false);
  EXPECT_EQ(one_reader->from_snapshot(), 1u);
  EXPECT_EQ(own_files->from_snapshot(), 0u);
  // Not read again: usage and peak; on v2 memory.events too (cpu.stat, in the same directory,
  // tells the cgroup is there). v1 reads memory.failcnt for that (its cpu mirror may not
  // exist). The limit both read, with the first sample's other limits.
  EXPECT_EQ(own_files->reads() - one_reader->reads(), v2 ? 3u : 2u) << "memory files not read";
  RecordProperty("reads_from_snapshot", int(one_reader->reads()));
  RecordProperty("reads_own_files", int(own_files->reads()));

  // A sample later, with a newer snapshot: the same files come from it, and the limit too
  // (the limits' off sample: for a run's own files it is read at every full reading).
  const uint64_t first_one = one_reader->reads(), first_own = own_files->reads();
  absl::SleepFor(absl::Milliseconds(200));  // the run grows by some 2.5 MiB meanwhile
  memory.SampleOnce(t0 + absl::Milliseconds(1200));
  one_reader->Sample(t0 + absl::Milliseconds(1300));
  own_files->Sample(t0 + absl::Milliseconds(1300));
  EXPECT_EQ(one_reader->from_snapshot(), 2u);
  EXPECT_EQ((own_files->reads() - first_own) - (one_reader->reads() - first_one), v2 ? 4u : 3u)
      << "memory files read again";
  RecordProperty("second_reads_from_snapshot", int(one_reader->reads() - first_one));
  RecordProperty("second_reads_own_files", int(own_files->reads() - first_own));
  const std::shared_ptr<const Snapshot> second = memory.Latest();
  const DomainMemory* later = nullptr;
  for (const DomainMemory& d : second->memory.at(stages.Resolve(top.path()).id).domains) {
    if (d.id == run.id()) later = &d;
  }
  ASSERT_NE(later, nullptr);

  std::vector<RunSample> points;
  std::optional<CgroupFacts> f = one_reader->Remove("job_1", points);
  ASSERT_TRUE(f);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].memory_bytes, domain->usage_bytes);
  EXPECT_GE(points[0].memory_bytes, 64 * kMiB);
  EXPECT_EQ(f->memory_limit_bytes, FileNumber(limit_file));
  EXPECT_EQ(f->memory_limit_bytes, 256 * kMiB);
  // The kernel's peak as the sampler read it, and the run's own file agrees.
  ASSERT_TRUE(f->memory_peak_bytes);
  EXPECT_EQ(f->memory_peak_bytes, later->peak_bytes);
  EXPECT_GE(*f->memory_peak_bytes, 64 * kMiB);
  EXPECT_LE(*f->memory_peak_bytes,  // the kernel's peak grew since, with the usage
            FileNumber(run.dir() + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes")));
  EXPECT_EQ(f->memory_failcnt, 0u) << "64 MiB never reached the 256 MiB limit";
}

}  // namespace
}  // namespace stagewatch
