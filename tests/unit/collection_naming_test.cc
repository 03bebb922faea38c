#include "cgroup/collection_naming.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "cgroup/cgroup_namer.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "stages/stage_directory.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

// A directory tree standing in for a cgroup hierarchy: directory inodes are the ids.
class CollectionNamingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-naming-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  uint64_t Make(const std::string& path) {
    std::filesystem::create_directories(root_ + path);
    return *CgroupIdOfDirectory(root_ + path);
  }
  void Remove(const std::string& path) { std::filesystem::remove_all(root_ + path); }

  std::string root_;
};

TEST_F(CollectionNamingTest, NamesLiveCgroupsAndReportsThemDeadAfterRemoval) {
  const uint64_t train = Make("/svc/stagewatch/train");
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  CollectionNaming naming(&namer);

  namer.Refresh();  // the sampler's, in the agent: a collection only reads the names
  naming.Begin();
  ASSERT_EQ(StageDirectory(stages).Find(*naming.StageFor(train))->name, "train");
  EXPECT_TRUE(naming.dead().empty());
  naming.End();

  Remove("/svc/stagewatch/train");
  namer.Refresh();
  naming.Begin();
  // Still named after its stage, not `unattributed`, and due for deletion.
  ASSERT_EQ(StageDirectory(stages).Find(*naming.StageFor(train))->name, "train");
  EXPECT_EQ(naming.dead().count(train), 1u);
  naming.End();
  EXPECT_EQ(naming.unknown(), 0u);
}

TEST_F(CollectionNamingTest, AnIdNoWalkSawIsDeferredUntilARefreshThenUnattributedAndCounted) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  CollectionNaming naming(&namer);
  const uint64_t ghost = 123456789;  // never a directory here

  namer.Refresh();
  naming.Begin();
  EXPECT_FALSE(naming.StageFor(ghost).has_value());
  EXPECT_TRUE(naming.dead().empty());
  naming.End();

  // Another collection before the next refresh (two trackers at one scrape): still deferred,
  // the walk that could name it has not run.
  naming.Begin();
  EXPECT_FALSE(naming.StageFor(ghost).has_value());
  naming.End();
  EXPECT_EQ(naming.unknown(), 0u);

  namer.Refresh();
  naming.Begin();
  std::optional<StageId> stage = naming.StageFor(ghost);
  ASSERT_TRUE(stage.has_value());
  EXPECT_EQ(*stage, kUnattributedStageId);
  EXPECT_EQ(naming.dead().count(ghost), 1u);
  EXPECT_EQ(naming.StageFor(ghost), kUnattributedStageId);  // asked twice, counted once
  naming.End();
  EXPECT_EQ(naming.unknown(), 1u);
}

TEST_F(CollectionNamingTest, ACgroupBornBetweenWalksIsNamedAtTheNextCollection) {
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  CollectionNaming naming(&namer);
  namer.Refresh();
  naming.Begin();
  naming.End();

  const uint64_t fresh = Make("/stagewatch/validate");
  naming.Begin();  // no refresh since: not named yet, nor given up on
  EXPECT_FALSE(naming.StageFor(fresh).has_value());
  naming.End();
  namer.Refresh();  // walks again: the interval is zero
  naming.Begin();
  ASSERT_TRUE(naming.StageFor(fresh).has_value());
  EXPECT_EQ(StageDirectory(stages).Find(*naming.StageFor(fresh))->name, "validate");
  naming.End();
  EXPECT_EQ(naming.unknown(), 0u);
}

TEST_F(CollectionNamingTest, StageTopsAreTheOutermostCgroupsOfEachNamedStage) {
  Make("/svc/stagewatch/train/worker-1");
  Make("/svc/stagewatch/train/worker-2");
  Make("/other/stagewatch/train");
  Make("/svc/stagewatch/validate");
  CgroupPathCache paths(root_);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  namer.Refresh();
  std::vector<std::string> tops;
  for (const NamedCgroup& c : namer.StageTops()) tops.push_back(c.stage.name + ":" + c.path);
  std::sort(tops.begin(), tops.end());
  EXPECT_EQ(tops, (std::vector<std::string>{"train:/other/stagewatch/train",
                                            "train:/svc/stagewatch/train",
                                            "validate:/svc/stagewatch/validate"}));
}

}  // namespace
}  // namespace stagewatch
