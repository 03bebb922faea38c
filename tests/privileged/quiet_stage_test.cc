// The memory sampler over the real sched probe: a stage whose only task sleeps is not read,
// and the sample after that task wakes and allocates reads it, with the kernel's figure.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "cgroup/cgroup_namer.h"
#include "cgroup/memory_stats.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "memory/memory_sampler.h"
#include "probes/sched_probe.h"
#include "sched/sched_tracker.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

constexpr size_t kAllocated = size_t{64} << 20;

TEST(QuietStageTest, AStageThatStartsAllocatingAfterALongSleepIsReadAtTheNextSample) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup stage("stagewatch/sw-quiet-wake");
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = stage.Spawn("sw-quiet-wake", [&] {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    std::vector<char> block(kAllocated);
    std::memset(block.data(), 1, block.size());  // every page touched: charged
    if (write(done[1], "x", 1) != 1) _exit(1);
    pause();
  });
  // Asleep in read() before the probe loads: from here its cgroup's counters stand still.
  ASSERT_TRUE(testing::WaitUntil(
      [child] {
        return testing::ReadFile("/proc/" + std::to_string(child) + "/stat").find(") S ") !=
               std::string::npos;
      },
      5000));
  auto probe = SchedProbe::Start(
      {.key = stage.layout().key, .features = testing::ProbeFeaturesForTests()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  CgroupPathCache paths(stage.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  SchedTracker tracker(probe->get(), &namer);
  int reads = 0;
  SampleReader reader{.stats = [&](const NamedCgroup& c) {
    if (c.path == stage.path()) reads++;
    return ReadMemoryStats(stage.layout(), c.path);
  }};
  MemorySampler sampler(&namer, stage.layout(), MemoryConfig{}, reader, kMemoryPart);
  // As the agent does: the tracker collects just before each sample.
  sampler.SetActivity([&tracker] {
    tracker.Collect();
    return tracker.LastLook();
  });
  const StageId id = stages.Resolve(stage.path()).id;

  const absl::Time t0 = absl::Now();
  sampler.SampleOnce(t0);
  ASSERT_EQ(reads, 1);
  const uint64_t asleep = sampler.Latest()->memory.at(id).usage_bytes;
  for (int s = 1; s <= 5; s++) {
    usleep(100 * 1000);
    sampler.SampleOnce(t0 + absl::Seconds(s));
  }
  EXPECT_EQ(reads, 1) << "its only task sleeps: its files are not read";

  ASSERT_EQ(write(go[1], "x", 1), 1);
  char c;
  ASSERT_EQ(read(done[0], &c, 1), 1);
  sampler.SampleOnce(t0 + absl::Seconds(6));
  EXPECT_EQ(reads, 2) << "it ran: read at the next sample";
  const uint64_t awake = sampler.Latest()->memory.at(id).usage_bytes;
  EXPECT_GE(awake, asleep + kAllocated * 9 / 10);
  // The kernel's own figure, read now, against the sample's (the task is asleep again).
  absl::StatusOr<MemoryCgroupStats> kernel = ReadMemoryStats(stage.layout(), stage.path());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_NEAR(double(kernel->usage_bytes), double(awake), double(1 << 20));

  kill(child, SIGKILL);
  testing::WaitForChild(child);
  for (int fd : {go[0], go[1], done[0], done[1]}) close(fd);
}

}  // namespace
}  // namespace stagewatch
