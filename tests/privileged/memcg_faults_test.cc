// Page faults from memory.stat (memory.fault_source: memcg, the default where the memory
// controller is) through the real sampler on real cgroups, against each faulting process's
// getrusage: a stage nested beneath another counted once, and its faults still taken off the
// outer stage once its cgroup is gone.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "sampler/memory_sampler.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

constexpr size_t kPage = 4096;

// Touches `pages` fresh anonymous pages in a child of `cgroup`; the child's faults (getrusage).
double FaultsOfAChildTouching(TestCgroup& cgroup, size_t pages) {
  int report[2];
  EXPECT_EQ(pipe(report), 0);
  pid_t child = cgroup.Spawn("sw-memcg-faults", [&] {
    void* p = mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) _exit(3);
    madvise(p, pages * kPage, MADV_NOHUGEPAGE);
    for (size_t off = 0; off < pages * kPage; off += kPage) static_cast<volatile char*>(p)[off] = 1;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const double faults = u.ru_minflt + u.ru_majflt;
    (void)!write(report[1], &faults, sizeof(faults));
  });
  EXPECT_EQ(testing::WaitForChild(child), 0);
  double faults = 0;
  EXPECT_EQ(read(report[0], &faults, sizeof(faults)), static_cast<ssize_t>(sizeof(faults)));
  close(report[0]);
  close(report[1]);
  return faults;
}

double Faults(const Snapshot& s, StageId stage) {
  auto it = s.faults.find(stage);
  if (it == s.faults.end()) return -1;
  return static_cast<double>(it->second.minor + it->second.major);
}

TEST(MemcgFaultsTest, EachStageCountsItsOwnFaultsAndANestedStageThatGoesStaysOffTheOuter) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup outer("stagewatch/sw-outer");
  TestCgroup run(outer, "run");  // on cgroup v2 processes live in leaves
  auto mid = std::make_unique<TestCgroup>(outer, "stagewatch");
  auto inner = std::make_unique<TestCgroup>(*mid, "sw-inner");

  CgroupPathCache paths(outer.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, outer.layout(), MemoryConfig{}, SampleReader{});
  const StageId outer_stage = stages.Resolve(outer.path()).id;
  const StageId inner_stage = stages.Resolve(inner->path()).id;
  ASSERT_NE(outer_stage, inner_stage);

  const double outer_faults = FaultsOfAChildTouching(run, 4096);
  const double inner_faults = FaultsOfAChildTouching(*inner, 8192);
  // memory.stat folds per-CPU counts in within 2 s (mm/memcontrol.c: FLUSH_TIME).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  std::shared_ptr<const Snapshot> s = sampler.Latest();
  std::printf("[ figures  ] outer %.0f (getrusage %.0f), inner %.0f (getrusage %.0f)\n",
              Faults(*s, outer_stage), outer_faults, Faults(*s, inner_stage), inner_faults);
  // Each stage's cgroups saw a few faults more than its child's: the child's start in them.
  EXPECT_NEAR(Faults(*s, outer_stage), outer_faults, 0.02 * outer_faults);
  EXPECT_NEAR(Faults(*s, inner_stage), inner_faults, 0.02 * inner_faults);
  EXPECT_TRUE(s->faults_uncovered.empty());

  const double outer_before = Faults(*s, outer_stage), inner_before = Faults(*s, inner_stage);
  inner.reset();  // the kernel keeps its faults in the outer stage's hierarchical count
  mid.reset();
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  s = sampler.Latest();
  EXPECT_EQ(Faults(*s, outer_stage), outer_before);
  EXPECT_EQ(Faults(*s, inner_stage), inner_before);
}

}  // namespace
}  // namespace stagewatch
