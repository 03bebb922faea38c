// A limited child cgroup removed between samples, on the real cgroup hierarchy beneath the
// test's own cgroup: the stage goes on with the domain that stays.
#include <memory>
#include <set>
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

std::set<std::string> DomainPaths(const StageMemory& m) {
  std::set<std::string> paths;
  for (const DomainMemory& d : m.domains) paths.insert(d.path);
  return paths;
}

TEST(LimitDomainRemovalTest, ARemovedLimitedChildLeavesTheOtherDomainAndNothingOfItself) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup top("stagewatch/sw-domain-removal");
  auto gone = std::make_unique<TestCgroup>(top, "run-gone");
  TestCgroup stays(top, "run-stays");
  gone->SetMemoryLimit(64 * kMiB);
  stays.SetMemoryLimit(128 * kMiB);
  const std::string gone_path = gone->path();

  CgroupPathCache paths(top.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, top.layout(), MemoryConfig{}, SampleReader{});
  const StageId stage = stages.Resolve(top.path()).id;

  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  StageMemory m = sampler.Latest()->memory.at(stage);
  EXPECT_EQ(DomainPaths(m), (std::set<std::string>{top.path(), gone_path, stays.path()}));
  EXPECT_EQ(m.limit_domains, 3u);

  gone.reset();  // rmdir between samples
  sampler.SampleOnce(absl::FromUnixSeconds(1001));
  sampler.SampleOnce(absl::FromUnixSeconds(1002));
  m = sampler.Latest()->memory.at(stage);
  EXPECT_EQ(DomainPaths(m), (std::set<std::string>{top.path(), stays.path()}));
  EXPECT_EQ(m.limit_domains, 2u);
  EXPECT_EQ(m.limit_bytes, 128 * kMiB);  // the one limit left
  // Gone before the refresh, it simply stopped being a domain: no read error.
  EXPECT_EQ(sampler.domain_skips(), 0u);
}

}  // namespace
}  // namespace stagewatch
