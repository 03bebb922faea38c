// Limits written on living cgroups, on the real hierarchy beneath the test's own cgroup: the
// memory sampler reads them at the next sample, as inotify tells it (cgroup/limit_watch.h),
// where polling would have found a child's within kLimitRecheckSamples samples and an idle
// top's within kFullReadEvery.
#include <string>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

constexpr uint64_t kMiB = 1 << 20;

std::optional<uint64_t> DomainLimit(const StageMemory& m, const std::string& path) {
  for (const DomainMemory& d : m.domains) {
    if (d.path == path) return d.limit_bytes;
  }
  return std::nullopt;
}

TEST(LimitWatchSamplerTest, ALimitWrittenOnALivingCgroupIsReadAtTheNextSample) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup top("stagewatch/sw-limit-watch");
  TestCgroup child(top, "run-later");

  CgroupPathCache paths(top.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, top.layout(), MemoryConfig{}, SampleReader{});
  const StageId stage = stages.Resolve(top.path()).id;

  // Past the first sample, which checks every cgroup, and on a sample that is not the child's
  // turn in the slower round (which would find its limit without being told).
  absl::Time now = absl::FromUnixSeconds(1000);
  uint64_t samples = 0;
  auto sample = [&] {
    sampler.SampleOnce(now);
    now += absl::Seconds(1);
    samples++;
  };
  sample();
  sample();
  while (child.id() % kLimitRecheckSamples == samples % kLimitRecheckSamples) sample();
  StageMemory m = sampler.Latest()->memory.at(stage);
  ASSERT_EQ(m.limit_domains, 1u);  // the top alone: no limit anywhere
  ASSERT_EQ(m.limit_bytes, std::nullopt);

  child.SetMemoryLimit(64 * kMiB);
  sample();
  m = sampler.Latest()->memory.at(stage);
  EXPECT_EQ(m.limit_domains, 2u);
  EXPECT_EQ(DomainLimit(m, child.path()), 64 * kMiB);
  EXPECT_EQ(m.limit_bytes, 64 * kMiB);

  // The top, idle (its usage does not move, so its limit would wait for its full read), and
  // lower than the child's: the stage's closest limit at the next sample.
  top.SetMemoryLimit(32 * kMiB);
  sample();
  m = sampler.Latest()->memory.at(stage);
  EXPECT_EQ(DomainLimit(m, top.path()), 32 * kMiB);
  EXPECT_EQ(m.limit_bytes, 32 * kMiB);

  // Lifted on the child: no longer a domain at the next sample.
  testing::WriteFile(child.dir() + (child.v2() ? "/memory.max" : "/memory.limit_in_bytes"),
                     child.v2() ? "max" : "-1");
  sample();
  m = sampler.Latest()->memory.at(stage);
  EXPECT_EQ(m.limit_domains, 1u);
  EXPECT_EQ(DomainLimit(m, child.path()), std::nullopt);
}

}  // namespace
}  // namespace stagewatch
