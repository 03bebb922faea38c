// The id ⇄ path cache and the namer fed by lifecycle events, on a directory tree standing in
// for a cgroup hierarchy (directory inodes are the ids), without root.
#include "signals/lifecycle/lifecycle_events.h"

#include <cstring>
#include <deque>
#include <filesystem>
#include <string>

#include "cgroup/cgroup_namer.h"
#include "cgroup_event_for.h"
#include "cgroup/collection_naming.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "stages/stage_directory.h"
#include "stages/stage_resolver.h"

namespace stagewatch {
namespace {

cgroup_event Event(cgroup_event_kind kind, uint64_t id, const std::string& path) {
  return testing::CgroupEventFor(kind, id, path);
}

// Events queue up as the ring buffer would hold them, and the cache drains them on demand.
class LifecycleEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-events-XXXXXX";
    root_ = mkdtemp(tmpl);
    paths_ = std::make_unique<CgroupPathCache>(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  uint64_t Make(const std::string& path) {
    std::filesystem::create_directories(root_ + path);
    return *CgroupIdOfDirectory(root_ + path);
  }
  // A cgroup made after the start walk: its directory and its queued mkdir event.
  uint64_t MakeWithEvent(const std::string& path) {
    const uint64_t id = Make(path);
    queued_.push_back(Event(CGROUP_EVENT_MKDIR, id, path));
    return id;
  }
  void RemoveWithEvent(uint64_t id, const std::string& path) {
    std::filesystem::remove_all(root_ + path);
    queued_.push_back(Event(CGROUP_EVENT_RMDIR, id, path));
  }
  void UseEvents() {
    paths_->UseEvents([this] {
      drains_++;
      while (!queued_.empty()) {
        ApplyLifecycleEvent(queued_.front(), paths_.get());
        queued_.pop_front();
      }
    });
  }

  std::string root_;
  std::unique_ptr<CgroupPathCache> paths_;
  std::deque<cgroup_event> queued_;
  int drains_ = 0;
};

TEST_F(LifecycleEventsTest, OneWalkAtStartThenEventsOnly) {
  const uint64_t old = Make("/old");
  UseEvents();
  EXPECT_EQ(paths_->stats().rescans, 1u);
  EXPECT_EQ(paths_->Lookup(old), "/old");

  const uint64_t fresh = MakeWithEvent("/stagewatch/train/job1");
  // A miss hands the queued mkdir to the cache before answering: no walk, no race.
  EXPECT_EQ(paths_->Lookup(fresh), "/stagewatch/train/job1");
  EXPECT_EQ(drains_, 1);
  // A directory made without an event (not in this hierarchy's events) is not walked for.
  const uint64_t silent = Make("/silent");
  EXPECT_EQ(paths_->Lookup(silent), std::nullopt);
  EXPECT_EQ(paths_->stats().rescans, 1u);
  EXPECT_EQ(paths_->stats().events, 1u);
  EXPECT_EQ(paths_->stats().unknown, 1u);
}

TEST_F(LifecycleEventsTest, RemovedCgroupsStayNameableAndAreListedOnce) {
  UseEvents();
  const uint64_t a = MakeWithEvent("/a");
  RemoveWithEvent(a, "/a");
  // Born and gone before anyone looked: still named, from its own events.
  EXPECT_EQ(paths_->Lookup(a), "/a");
  EXPECT_TRUE(paths_->Current().size() == 1u);  // the root only
  uint64_t cursor = 0;
  std::vector<RemovedCgroup> removed = paths_->RemovedSince(&cursor);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].id, a);
  EXPECT_EQ(removed[0].path, "/a");
  EXPECT_TRUE(paths_->RemovedSince(&cursor).empty());
}

TEST_F(LifecycleEventsTest, AnRmdirWithoutItsMkdirIsNamedByItsOwnPath) {
  UseEvents();
  queued_.push_back(Event(CGROUP_EVENT_RMDIR, 424242, "/stagewatch/eval/7"));
  EXPECT_EQ(paths_->Lookup(424242), "/stagewatch/eval/7");
}

TEST_F(LifecycleEventsTest, RemovalsKeptAreBounded) {
  UseEvents();
  for (uint64_t id = 1; id <= CgroupPathCache::kRemovedKept + 10; id++) {
    paths_->OnMkdir(id, "/c" + std::to_string(id));
    paths_->OnRmdir(id, "/c" + std::to_string(id));
  }
  EXPECT_EQ(paths_->Lookup(1), std::nullopt);  // the oldest are let go
  EXPECT_EQ(paths_->Lookup(CgroupPathCache::kRemovedKept + 10),
            "/c" + std::to_string(CgroupPathCache::kRemovedKept + 10));
  uint64_t cursor = 0;
  EXPECT_EQ(paths_->RemovedSince(&cursor).size(), CgroupPathCache::kRemovedKept);
}

// A churn's removals go once it has stopped for removed_kept_for, index slots included; a
// removal younger than that stays nameable.
TEST_F(LifecycleEventsTest, RemovalsGoOnceKeptForHasPassedAndTheirIndexShrinks) {
  absl::Time now = absl::FromUnixSeconds(1700000000);
  CgroupPathCacheOptions options;
  options.removed_kept_for = absl::Seconds(30);
  options.now = [&now] { return now; };
  paths_ = std::make_unique<CgroupPathCache>(root_, options);
  UseEvents();
  const uint64_t churn = 3000;
  for (uint64_t id = 1; id <= churn; id++) {
    paths_->OnMkdir(id, "/stagewatch/s/churn_" + std::to_string(id));
    paths_->OnRmdir(id, "/stagewatch/s/churn_" + std::to_string(id));
  }
  EXPECT_EQ(paths_->held().removed, churn);
  EXPECT_GE(paths_->held().index_capacity, churn);
  now += absl::Seconds(20);
  paths_->OnMkdir(churn + 1, "/stagewatch/s/late");
  paths_->OnRmdir(churn + 1, "/stagewatch/s/late");
  paths_->ApplyQueued();
  EXPECT_EQ(paths_->held().removed, churn + 1);  // none is 30 s old yet
  EXPECT_EQ(paths_->Lookup(1), "/stagewatch/s/churn_1");

  now += absl::Seconds(10);
  paths_->ApplyQueued();  // the namer's refresh, a second later
  EXPECT_EQ(paths_->held().removed, 1u);
  EXPECT_LE(paths_->held().index_capacity, 64u);
  EXPECT_EQ(paths_->Lookup(1), std::nullopt);
  EXPECT_EQ(paths_->Lookup(churn + 1), "/stagewatch/s/late");
  uint64_t cursor = 0;
  ASSERT_EQ(paths_->RemovedSince(&cursor).size(), 1u);

  now += absl::Seconds(20);
  paths_->ApplyQueued();
  EXPECT_EQ(paths_->held().removed, 0u);
  EXPECT_LE(paths_->held().index_capacity, 1u);
}

// The namer's dead cgroups go a few collections after a churn, and so do their map's slots.
TEST_F(LifecycleEventsTest, NamerGivesBackTheSlotsOfAChurnsDeadCgroups) {
  UseEvents();
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(paths_.get(), &stages);
  const uint64_t kept = MakeWithEvent("/stagewatch/s/kept");
  namer.Refresh();
  const uint64_t churn = 3000;
  for (uint64_t id = 1; id <= churn; id++) {
    paths_->OnMkdir(id, "/stagewatch/s/churn_" + std::to_string(id));
  }
  namer.Refresh();  // alive: named and memoised
  for (uint64_t id = 1; id <= churn; id++) {
    paths_->OnRmdir(id, "/stagewatch/s/churn_" + std::to_string(id));
  }
  namer.Refresh();
  EXPECT_EQ(namer.held().dead, churn);
  EXPECT_EQ(namer.StageOf(1)->name, "s");  // still named for its last counts
  EXPECT_GE(namer.held().remembered_capacity, churn);

  for (uint64_t i = 0; i < CgroupNamer::kKeptCollections; i++) namer.BeginCollection();
  EXPECT_EQ(namer.held().dead, 0u);
  EXPECT_FALSE(namer.StageOf(1).has_value());
  EXPECT_EQ(namer.StageOf(kept)->name, "s");
  EXPECT_LE(namer.held().remembered_capacity, 64u);
  EXPECT_EQ(namer.held().remembered, 2u);  // the root and `kept`
}

// A churn of 2,000 cgroups a second, each born and removed between two refreshes (a second
// apart): all of them are still named when the trackers next collect, 3 s later, so their last
// counts go to their stage rather than `unattributed`.
TEST_F(LifecycleEventsTest, AFastChurnsDeadCgroupsAreNamedUntilTheTrackersCollect) {
  UseEvents();
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(paths_.get(), &stages);
  namer.Refresh();
  const uint64_t per_second = 2000, seconds = 3;
  uint64_t id = 1;
  for (uint64_t s = 0; s < seconds; s++) {
    for (uint64_t i = 0; i < per_second; i++, id++) {
      paths_->OnMkdir(id, "/stagewatch/s/churn_" + std::to_string(id));
      paths_->OnRmdir(id, "/stagewatch/s/churn_" + std::to_string(id));
    }
    namer.Refresh();
  }
  namer.BeginCollection();
  uint64_t named = 0;
  for (uint64_t dead = 1; dead < id; dead++) named += namer.StageOf(dead).has_value();
  EXPECT_EQ(named, per_second * seconds);
}

TEST_F(LifecycleEventsTest, ResyncAfterLostEventsFindsWhatTheyWouldHaveSaid) {
  const uint64_t gone = Make("/gone");
  UseEvents();
  const uint64_t born = Make("/born");           // its mkdir was lost
  std::filesystem::remove_all(root_ + "/gone");  // and so was this rmdir
  paths_->Resync();
  EXPECT_EQ(paths_->stats().rescans, 2u);
  EXPECT_EQ(paths_->Lookup(born), "/born");
  uint64_t cursor = 0;
  std::vector<RemovedCgroup> removed = paths_->RemovedSince(&cursor);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].id, gone);
}

TEST_F(LifecycleEventsTest, APathCutShortIsFoundByAWalk) {
  UseEvents();
  const std::string deep = "/" + std::string(200, 'a') + "/" + std::string(200, 'b') + "/" +
                           std::string(200, 'c') + "/" + std::string(200, 'd') + "/" +
                           std::string(200, 'e') + "/" + std::string(200, 'f');
  const uint64_t id = Make(deep);
  ApplyLifecycleEvent(Event(CGROUP_EVENT_MKDIR, id, deep), paths_.get());  // cut at 1023 bytes
  EXPECT_EQ(paths_->Lookup(id), deep);
  EXPECT_EQ(paths_->stats().rescans, 2u);
}

TEST_F(LifecycleEventsTest, ACgroupBornAndRemovedBetweenCollectionsIsFoldedIntoItsStage) {
  UseEvents();
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(paths_.get(), &stages);
  CollectionNaming naming(&namer);
  namer.Refresh();
  naming.Begin();
  naming.End();

  const uint64_t job = MakeWithEvent("/svc/stagewatch/train/job1");
  RemoveWithEvent(job, "/svc/stagewatch/train/job1");
  namer.Refresh();  // the sampler's: it applies the queued events
  naming.Begin();
  ASSERT_TRUE(naming.StageFor(job).has_value());
  EXPECT_EQ(StageDirectory(stages).Find(*naming.StageFor(job))->name, "train");
  EXPECT_EQ(naming.dead().count(job), 1u);  // its map entries go once folded
  naming.End();
  EXPECT_EQ(naming.unknown(), 0u);

  // A few collections later the name is let go.
  for (uint64_t i = 0; i < CgroupNamer::kKeptCollections; i++) namer.BeginCollection();
  EXPECT_FALSE(namer.StageOf(job).has_value());
}

TEST_F(LifecycleEventsTest, NamerRebuildsOnlyWhenTheCacheChanged) {
  UseEvents();
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(paths_.get(), &stages);
  namer.Refresh();
  const uint64_t version = paths_->version();
  namer.Refresh();
  EXPECT_EQ(paths_->version(), version);
  const uint64_t job = MakeWithEvent("/stagewatch/eval/1");
  namer.Refresh();  // the queued event is applied first, then seen
  EXPECT_TRUE(namer.Alive(job));
  ASSERT_EQ(namer.StageTops().size(), 1u);
  EXPECT_EQ(namer.StageTops()[0].stage.name, "eval");
}

TEST_F(LifecycleEventsTest, ForgottenStagesFreeTheirSlotForTheNextOne) {
  UseEvents();
  DiscoveryConfig discovery;
  discovery.max_stages = 1;
  discovery.forget_after = absl::Seconds(5);
  StageResolver stages({}, discovery);
  absl::Time now = absl::FromUnixSeconds(1700000000);
  CgroupNamer namer(paths_.get(), &stages, absl::Seconds(1), [&now] { return now; });

  const uint64_t a = MakeWithEvent("/stagewatch/a");
  namer.Refresh();
  const uint64_t b = MakeWithEvent("/stagewatch/b");  // no slot while `a` holds it
  namer.Refresh();
  EXPECT_EQ(namer.StageOf(a)->name, "a");
  EXPECT_EQ(namer.StageOf(b)->name, kUnattributedStage);

  RemoveWithEvent(a, "/stagewatch/a");
  namer.Refresh();
  now += absl::Seconds(6);
  namer.Refresh();
  // `a` is forgotten, and the live `b` is named again with the freed slot.
  EXPECT_EQ(namer.StageOf(b)->name, "b");
  std::vector<std::string> known;
  for (const Stage& s : stages.KnownStages()) known.push_back(s.name);
  EXPECT_EQ(known, (std::vector<std::string>{"b", "unattributed"}));
}

// A run that ends long after its stage's cgroups went names its preemptors, some of them
// cgroups of stages forgotten since: named, and not discovered again (at 10,000 cgroups
// removed at once, 70 of 500 stages came back that way and were forgotten 7 s late).
TEST_F(LifecycleEventsTest, ARemovedCgroupNamedLateDoesNotBringItsForgottenStageBack) {
  UseEvents();
  DiscoveryConfig discovery;
  discovery.forget_after = absl::Seconds(5);
  StageResolver stages({}, discovery);
  absl::Time now = absl::FromUnixSeconds(1700000000);
  CgroupNamer namer(paths_.get(), &stages, absl::Seconds(1), [&now] { return now; });
  const uint64_t a = MakeWithEvent("/stagewatch/a/run1");
  namer.Refresh();
  RemoveWithEvent(a, "/stagewatch/a/run1");
  namer.Refresh();
  now += absl::Seconds(6);
  namer.Refresh();
  auto known = [&] {
    std::vector<std::string> names;
    for (const Stage& s : stages.KnownStages()) names.push_back(s.name);
    return names;
  };
  ASSERT_EQ(known(), (std::vector<std::string>{"unattributed"}));
  for (uint64_t i = 0; i <= CgroupNamer::kKeptCollections; i++) namer.BeginCollection();
  ASSERT_FALSE(namer.StageOf(a).has_value()) << "the namer keeps the dead only a few collections";

  EXPECT_EQ(namer.StageNameNow(a), "a");
  EXPECT_EQ(known(), (std::vector<std::string>{"unattributed"}));
  // A name never seen is named as it would be, and not discovered either.
  const uint64_t b = MakeWithEvent("/stagewatch/b/run1");
  EXPECT_EQ(namer.StageNameNow(b), "b");
  EXPECT_EQ(known(), (std::vector<std::string>{"unattributed"}));
  EXPECT_EQ(namer.StageNameNow(987654321), std::nullopt);
}

}  // namespace
}  // namespace stagewatch
