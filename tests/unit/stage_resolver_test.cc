#include "stages/stage_resolver.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "log.h"

namespace stagewatch {
namespace {

StageConfig MakeStage(std::string name, std::vector<std::string> paths,
                      std::vector<std::string> units = {}, std::string pipeline = "") {
  StageConfig stage;
  stage.name = std::move(name);
  stage.pipeline = std::move(pipeline);
  stage.cgroup_paths = std::move(paths);
  stage.systemd_units = std::move(units);
  return stage;
}

DiscoveryConfig Discovery(int max_stages = 32, std::string pipeline = "") {
  DiscoveryConfig discovery;
  discovery.max_stages = max_stages;
  discovery.pipeline = std::move(pipeline);
  return discovery;
}

std::string NameOf(StageResolver& resolver, std::string_view path) {
  return resolver.Resolve(path).name;
}

TEST(StageResolverTest, PathGlobAndInheritance) {
  StageResolver resolver({MakeStage("train", {"/**/train"}, {}, "nightly")}, Discovery());
  Stage stage = resolver.Resolve("/a/b/train");
  EXPECT_EQ(stage.name, "train");
  EXPECT_EQ(stage.pipeline, "nightly");
  EXPECT_EQ(NameOf(resolver, "/a/b/train/x"), "train");
  EXPECT_EQ(NameOf(resolver, "/a/b/train/x/y/z"), "train");
  EXPECT_EQ(NameOf(resolver, "/train"), "train");
  EXPECT_EQ(NameOf(resolver, "/a/b"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/a/b/trainer"), kUnattributedStage);
  EXPECT_EQ(resolver.Resolve("/").name, kUnattributedStage);
  EXPECT_EQ(resolver.Resolve("/").pipeline, "");
}

TEST(StageResolverTest, DeepestAncestorWins) {
  StageResolver resolver(
      {MakeStage("pipeline", {"/research"}), MakeStage("validate", {"/research/validate"})},
      Discovery());
  EXPECT_EQ(NameOf(resolver, "/research"), "pipeline");
  EXPECT_EQ(NameOf(resolver, "/research/ingest/job"), "pipeline");
  EXPECT_EQ(NameOf(resolver, "/research/validate"), "validate");
  EXPECT_EQ(NameOf(resolver, "/research/validate/job/1"), "validate");
}

TEST(StageResolverTest, DeeperMatchWinsOverFileOrder) {
  // The first stage matches an ancestor of every cgroup below /a, but the second matches a
  // deeper one.
  StageResolver resolver({MakeStage("outer", {"/a"}), MakeStage("train", {"/a/train"})},
                         Discovery());
  EXPECT_EQ(NameOf(resolver, "/a/train/x"), "train");
  EXPECT_EQ(NameOf(resolver, "/a/other"), "outer");
  // "/**" matches every path itself, so at the deepest level it wins by file order.
  StageResolver catch_all({MakeStage("all", {"/**"}), MakeStage("train", {"/a/train"})},
                          Discovery());
  EXPECT_EQ(NameOf(catch_all, "/a/train"), "all");
}

TEST(StageResolverTest, FirstConfiguredStageWinsAtSameDepth) {
  StageResolver resolver({MakeStage("first", {"/jobs/*"}), MakeStage("second", {"/jobs/a"})},
                         Discovery());
  EXPECT_EQ(NameOf(resolver, "/jobs/a"), "first");
  EXPECT_EQ(NameOf(resolver, "/jobs/a/sub"), "first");
}

TEST(StageResolverTest, SystemdUnitMatchesOneComponent) {
  StageResolver resolver({MakeStage("train", {}, {"train*.service"}, "nightly")}, Discovery());
  Stage stage = resolver.Resolve("/system.slice/train.service");
  EXPECT_EQ(stage.name, "train");
  EXPECT_EQ(stage.pipeline, "nightly");
  EXPECT_EQ(NameOf(resolver, "/system.slice/train-2.service/payload"), "train");
  EXPECT_EQ(NameOf(resolver, "/system.slice/training.scope"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/system.slice"), kUnattributedStage);
}

TEST(StageResolverTest, DiscoveryNamesStages) {
  StageResolver resolver({}, Discovery(32, "nightly"));
  Stage stage = resolver.Resolve("/svc/stagewatch/train/job1");
  EXPECT_EQ(stage.name, "train");
  EXPECT_EQ(stage.pipeline, "nightly");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/validate"), "validate");
  EXPECT_EQ(NameOf(resolver, "/stagewatch"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/svc/stagewatch"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/svc/other/train"), kUnattributedStage);
}

TEST(StageResolverTest, DiscoveryUsesConfiguredDirectoryAndCanBeDisabled) {
  DiscoveryConfig custom = Discovery();
  custom.directory = "pipelines";
  StageResolver resolver({}, custom);
  EXPECT_EQ(NameOf(resolver, "/pipelines/ingest/1"), "ingest");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/ingest/1"), kUnattributedStage);

  DiscoveryConfig off = Discovery();
  off.enabled = false;
  StageResolver disabled({}, off);
  EXPECT_EQ(NameOf(disabled, "/stagewatch/train"), kUnattributedStage);
}

TEST(StageResolverTest, InvalidDiscoveredNamesAreUnattributed) {
  StageResolver resolver({}, Discovery());
  EXPECT_EQ(NameOf(resolver, "/stagewatch/9lives"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/has space"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/semi;colon/x"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/_ok.name-1"), "_ok.name-1");
  // Only the valid name became a stage.
  std::vector<Stage> known = resolver.KnownStages();
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0].name, "_ok.name-1");
  EXPECT_EQ(known[1].name, kUnattributedStage);
}

TEST(StageResolverTest, DiscoveredNameOfConfiguredStageUsesConfiguredStage) {
  StageResolver resolver({MakeStage("train", {"/nowhere"}, {}, "nightly")},
                         Discovery(1, "discovered"));
  Stage stage = resolver.Resolve("/stagewatch/train/job");
  EXPECT_EQ(stage.name, "train");
  EXPECT_EQ(stage.pipeline, "nightly");
  // It took no discovery slot: one other name still fits.
  EXPECT_EQ(NameOf(resolver, "/stagewatch/eval"), "eval");
  EXPECT_EQ(resolver.discovery_overflows(), 0u);
}

TEST(StageResolverTest, ConfiguredWinsOverDiscoveryAtSameDepth) {
  StageResolver resolver({MakeStage("special", {"/stagewatch/train"})}, Discovery());
  EXPECT_EQ(NameOf(resolver, "/stagewatch/train/x"), "special");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/eval/x"), "eval");
}

TEST(StageResolverTest, DeeperDiscoveryWinsOverShallowerConfigured) {
  StageResolver resolver({MakeStage("research", {"/research"})}, Discovery());
  EXPECT_EQ(NameOf(resolver, "/research/stagewatch/train/job"), "train");
  EXPECT_EQ(NameOf(resolver, "/research/other"), "research");
  // And a configured match deeper than the discovered name wins over it.
  StageResolver nested({MakeStage("inner", {"/**/train/inner"})}, Discovery());
  EXPECT_EQ(NameOf(nested, "/stagewatch/train/inner/1"), "inner");
  EXPECT_EQ(NameOf(nested, "/stagewatch/train/other"), "train");
}

TEST(StageResolverTest, DiscoveryOverflowIsBoundedAndCounted) {
  StageResolver resolver({}, Discovery(2));
  EXPECT_EQ(NameOf(resolver, "/stagewatch/a"), "a");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/b/x"), "b");
  EXPECT_EQ(resolver.discovery_overflows(), 0u);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/c"), kUnattributedStage);
  EXPECT_EQ(resolver.discovery_overflows(), 1u);
  // Every resolution of an overflowing name counts, memoised or not.
  EXPECT_EQ(NameOf(resolver, "/stagewatch/c"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/d/1"), kUnattributedStage);
  EXPECT_EQ(resolver.discovery_overflows(), 3u);
  // Names already discovered still resolve.
  EXPECT_EQ(NameOf(resolver, "/stagewatch/a/new"), "a");
  EXPECT_EQ(resolver.discovery_overflows(), 3u);

  std::vector<Stage> known = resolver.KnownStages();
  ASSERT_EQ(known.size(), 3u);
  EXPECT_EQ(known[0].name, "a");
  EXPECT_EQ(known[1].name, "b");
  EXPECT_EQ(known[2].name, kUnattributedStage);
}

std::vector<std::string> KnownNames(const StageResolver& resolver) {
  std::vector<std::string> names;
  for (const Stage& s : resolver.KnownStages()) names.push_back(s.name);
  return names;
}

TEST(StageResolverTest, FirstOverflowLogsOneWarningNamingTheStageAndTheKey) {
  std::ostringstream log;
  Log::SetSink(&log);
  StageResolver resolver({}, Discovery(1));
  EXPECT_EQ(NameOf(resolver, "/stagewatch/a"), "a");
  EXPECT_EQ(log.str(), "");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/b"), kUnattributedStage);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/c"), kUnattributedStage);
  Log::SetSink(nullptr);
  const std::string text = log.str();
  EXPECT_NE(text.find("refused_stage=b"), std::string::npos) << text;
  EXPECT_NE(text.find("discovery.max_stages"), std::string::npos) << text;
  EXPECT_EQ(text.find("refused_stage=c"), std::string::npos) << "one warning only: " << text;
}

TEST(StageResolverTest, DiscoveredStageWithoutCgroupsIsForgottenAfterForgetAfter) {
  std::ostringstream log;
  Log::SetSink(&log);
  DiscoveryConfig discovery = Discovery(1);
  discovery.forget_after = absl::Seconds(5);
  StageResolver resolver({MakeStage("train", {"/train"})}, discovery);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/a/1"), "a");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/b/1"), kUnattributedStage);  // no slot

  EXPECT_FALSE(resolver.ForgetGone({resolver.Resolve("/stagewatch/a/1").id}, t0));
  EXPECT_FALSE(resolver.ForgetGone({}, t0 + absl::Seconds(1)));  // gone from here
  EXPECT_FALSE(resolver.ForgetGone({}, t0 + absl::Seconds(5.9)));
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "a", "unattributed"}));
  EXPECT_TRUE(resolver.ForgetGone({}, t0 + absl::Seconds(6)));
  Log::SetSink(nullptr);
  // Configured stages stay; the slot is free, and the memoised `unattributed` is gone.
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "unattributed"}));
  EXPECT_NE(log.str().find("pipeline_stage=a"), std::string::npos) << log.str();
  EXPECT_EQ(NameOf(resolver, "/stagewatch/b/1"), "b");
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "b", "unattributed"}));
}

TEST(StageResolverTest, AStageThatComesBackInTimeIsKept) {
  DiscoveryConfig discovery = Discovery();
  discovery.forget_after = absl::Seconds(5);
  StageResolver resolver({}, discovery);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  const StageId a = resolver.Resolve("/stagewatch/a/1").id;
  EXPECT_FALSE(resolver.ForgetGone({}, t0));
  EXPECT_FALSE(resolver.ForgetGone({a}, t0 + absl::Seconds(4)));  // a new run of it
  EXPECT_FALSE(resolver.ForgetGone({}, t0 + absl::Seconds(8)));      // the clock restarts
  EXPECT_TRUE(resolver.ForgetGone({}, t0 + absl::Seconds(13)));
}

// NameOf names a path as Resolve would, but discovers nothing: a forgotten stage stays
// forgotten, a new name takes no slot, and overflows are neither counted nor logged.
TEST(StageResolverTest, NameOfDiscoversNothing) {
  std::ostringstream log;
  Log::SetSink(&log);
  DiscoveryConfig discovery = Discovery(2, "nightly");
  discovery.forget_after = absl::Seconds(5);
  StageResolver resolver({MakeStage("train", {"/train"})}, discovery);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  EXPECT_EQ(NameOf(resolver, "/stagewatch/a/1"), "a");
  EXPECT_FALSE(resolver.ForgetGone({}, t0));
  EXPECT_TRUE(resolver.ForgetGone({}, t0 + absl::Seconds(6)));
  ASSERT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "unattributed"}));

  EXPECT_EQ(resolver.NameOf("/stagewatch/a/1"), "a");     // forgotten
  EXPECT_EQ(resolver.NameOf("/stagewatch/new/2"), "new");  // never seen
  EXPECT_EQ(resolver.NameOf("/train/x"), "train");
  EXPECT_EQ(resolver.NameOf("/stagewatch/9bad"), kUnattributedStage);
  EXPECT_EQ(resolver.NameOf("/elsewhere"), kUnattributedStage);
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "unattributed"}));

  // Discovered ones by their name; past max_stages, `unattributed` as Resolve says, uncounted.
  EXPECT_EQ(NameOf(resolver, "/stagewatch/b/1"), "b");
  EXPECT_EQ(NameOf(resolver, "/stagewatch/c/1"), "c");
  EXPECT_EQ(resolver.NameOf("/stagewatch/b/7"), "b");
  EXPECT_EQ(resolver.NameOf("/stagewatch/d/1"), kUnattributedStage);
  EXPECT_EQ(resolver.discovery_overflows(), 0u);
  Log::SetSink(nullptr);
  EXPECT_EQ(log.str().find("max_stages"), std::string::npos) << log.str();
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"train", "b", "c", "unattributed"}));
}

TEST(StageResolverTest, ZeroForgetAfterNeverForgets) {
  DiscoveryConfig discovery = Discovery();
  discovery.forget_after = absl::ZeroDuration();
  StageResolver resolver({}, discovery);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  NameOf(resolver, "/stagewatch/a/1");
  EXPECT_FALSE(resolver.ForgetGone({}, t0));
  EXPECT_FALSE(resolver.ForgetGone({}, t0 + absl::Hours(1000)));
  EXPECT_EQ(KnownNames(resolver), (std::vector<std::string>{"a", "unattributed"}));
}

// A forgotten stage's id is never handed out again: not to the next stage discovered in its
// slot, nor to itself when it comes back, so state still kept under the old id (until the
// tracker's next KeepStages) cannot be counted as a newer stage's.
TEST(StageResolverTest, IdsOfForgottenStagesAreNeverReused) {
  DiscoveryConfig discovery = Discovery(1);
  discovery.forget_after = absl::Seconds(1);
  StageResolver resolver({MakeStage("train", {"/train"}, {}, "nightly")}, discovery);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  const Stage train = resolver.Resolve("/train/job");
  EXPECT_NE(train.id, kUnattributedStageId);
  EXPECT_EQ(resolver.Resolve("/elsewhere").id, kUnattributedStageId);
  const Stage a = resolver.Resolve("/stagewatch/a/1");
  EXPECT_NE(a.id, train.id);
  EXPECT_EQ(resolver.Resolve("/stagewatch/a/2").id, a.id);  // one stage, one id
  EXPECT_EQ(resolver.Resolve("/stagewatch/b/1").id, kUnattributedStageId);  // no slot

  std::vector<StageId> seen = {kUnattributedStageId, train.id, a.id};
  for (int round = 0; round < 4; ++round) {
    const absl::Time t = t0 + absl::Seconds(10 * round);
    EXPECT_FALSE(resolver.ForgetGone({}, t));
    EXPECT_TRUE(resolver.ForgetGone({}, t + absl::Seconds(2)));
    // The slot goes to b, then to a again, alternately: each time under a new id.
    const Stage next = resolver.Resolve(round % 2 == 0 ? "/stagewatch/b/1" : "/stagewatch/a/1");
    EXPECT_EQ(next.name, round % 2 == 0 ? "b" : "a");
    EXPECT_EQ(std::count(seen.begin(), seen.end(), next.id), 0) << "reused id " << next.id;
    EXPECT_TRUE(resolver.KnownStageIds()->contains(next.id));
    seen.push_back(next.id);
  }
  // Configured stages keep theirs, and the retired ids are not known any more.
  EXPECT_EQ(resolver.Resolve("/train").id, train.id);
  EXPECT_FALSE(resolver.KnownStageIds()->contains(a.id));
  EXPECT_EQ(resolver.KnownStageIds()->size(), 3u);  // train, the last discovered, unattributed
}

TEST(StageResolverTest, KnownStagesListsConfiguredDiscoveredAndUnattributed) {
  StageResolver resolver(
      {MakeStage("ingest", {"/ingest"}, {}, "p1"), MakeStage("train", {}, {"train.service"})},
      Discovery(32, "p2"));
  std::vector<Stage> known = resolver.KnownStages();
  ASSERT_EQ(known.size(), 3u);
  EXPECT_EQ(known[0].name, "ingest");
  EXPECT_EQ(known[0].pipeline, "p1");
  EXPECT_EQ(known[1].name, "train");
  EXPECT_EQ(known[2].name, kUnattributedStage);

  resolver.Resolve("/stagewatch/eval/1");
  resolver.Resolve("/stagewatch/eval/2");  // same name, one stage
  known = resolver.KnownStages();
  ASSERT_EQ(known.size(), 4u);
  EXPECT_EQ(known[2].name, "eval");
  EXPECT_EQ(known[2].pipeline, "p2");
  EXPECT_EQ(known[3].name, kUnattributedStage);
}

TEST(StageResolverTest, ConcurrentResolutionsAgree) {
  StageResolver resolver({MakeStage("train", {"/**/train"})}, Discovery(4));
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string path = "/x" + std::to_string(i % 50) + "/train/" + std::to_string(t);
        if (resolver.Resolve(path).name != "train") ++wrong[t];
        resolver.Resolve("/stagewatch/s" + std::to_string(i % 8));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0);
  // 8 names, 4 slots: exactly 4 discovered, whichever came first.
  EXPECT_EQ(resolver.KnownStages().size(), 1u + 4u + 1u);
  EXPECT_GT(resolver.discovery_overflows(), 0u);
}

}  // namespace
}  // namespace stagewatch
