#include "stages/stage_counters.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using Totals = std::map<std::string, std::vector<uint64_t>>;
using V = std::vector<uint64_t>;

// The tests name stages; the counters fold under ids.
const std::vector<std::string> kNames = {"unattributed", "train", "eval", "ingest",
                                         "validate", "a", "b"};
StageId Id(const std::string& name) {
  return static_cast<StageId>(std::find(kNames.begin(), kNames.end(), name) - kNames.begin());
}
Totals Named(const std::map<StageId, V>& totals) {
  Totals named;
  for (const auto& [id, values] : totals) named[kNames.at(id)] = values;
  return named;
}

CgroupCounterSample S(uint64_t id, const std::string& stage, V values) {
  return CgroupCounterSample{id, Id(stage), std::move(values)};
}

TEST(StageCountersTest, SumsLiveCgroupsPerStage) {
  StageCounters counters(2);
  counters.Update({S(1, "train", {10, 1}), S(2, "train", {5, 2}), S(3, "eval", {7, 0})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {15, 3}}, {"eval", {7, 0}}}));
  EXPECT_EQ(counters.live_cgroups(), 3u);
  counters.Update({S(1, "train", {12, 1}), S(2, "train", {6, 4}), S(3, "eval", {9, 0})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {18, 5}}, {"eval", {9, 0}}}));
}

TEST(StageCountersTest, DeadCgroupIsFoldedIntoRetiredTotals) {
  StageCounters counters(1);
  counters.Update({S(1, "train", {10}), S(2, "train", {5})});
  counters.Update({S(2, "train", {6})});  // cgroup 1 died at 10
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {16}}}));
  EXPECT_EQ(counters.live_cgroups(), 1u);
  counters.Update({});  // all gone: the stage stays, with what it counted
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {16}}}));
  EXPECT_EQ(counters.live_cgroups(), 0u);
}

// ForEachTotal gives each stage once, in stage order, with what its gone and its live cgroups
// counted: a stage with only gone cgroups, one with only live ones and one with both.
TEST(StageCountersTest, EachTotalComesOnceInStageOrderFromRetiredAndLive) {
  StageCounters counters(2);
  counters.Update({S(1, "train", {10, 1}), S(2, "eval", {5, 2}), S(3, "ingest", {7, 0}),
                   S(4, "eval", {1, 1})});
  counters.Update({S(2, "eval", {6, 2}), S(3, "ingest", {9, 3}), S(5, "a", {4, 4})});
  std::vector<std::pair<std::string, V>> walked;
  counters.ForEachTotal([&walked](StageId stage, absl::Span<const uint64_t> total) {
    walked.emplace_back(kNames.at(stage), V(total.begin(), total.end()));
  });
  const std::vector<std::pair<std::string, V>> expected = {
      {"train", {10, 1}}, {"eval", {7, 3}}, {"ingest", {9, 3}}, {"a", {4, 4}}};
  EXPECT_EQ(walked, expected) << "in StageId order: train, eval, ingest, a";
  EXPECT_EQ(Named(counters.Totals()), (Totals(expected.begin(), expected.end())));
}

TEST(StageCountersTest, RecreatedCgroupWithNewIdKeepsCountingUp) {
  StageCounters counters(1);
  counters.Update({S(100, "train", {40})});
  counters.Update({S(101, "train", {3})});  // same path, new id, fresh counter
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {43}}}));
  counters.Update({S(101, "train", {8})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {48}}}));
}

TEST(StageCountersTest, CounterResetIsRetiredAndRecountedFromZero) {
  StageCounters counters(2);
  counters.Update({S(1, "train", {100, 50})});
  counters.Update({S(1, "train", {4, 60})});  // first value restarted (evicted map entry)
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {104, 60}}}));
  counters.Update({S(1, "train", {10, 61})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {110, 61}}}));
  counters.Update({S(1, "train", {0, 0})});  // both restarted to zero
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {110, 61}}}));
  counters.Update({S(1, "train", {1, 1})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {111, 62}}}));
}

TEST(StageCountersTest, BaselineOnlyForTheFirstSnapshot) {
  StageCounters counters(1, /*count_from_first_snapshot=*/true);
  counters.Update({S(1, "train", {1000})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {0}}}));
  counters.Update({S(1, "train", {1004}), S(2, "train", {7})});  // 2 is new: counts all of it
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {11}}}));
  counters.Update({S(2, "train", {9})});  // 1 died: only what it counted since start moves
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {13}}}));
}

TEST(StageCountersTest, BaselinedCounterThatResetsCountsFromZero) {
  StageCounters counters(1, /*count_from_first_snapshot=*/true);
  counters.Update({S(1, "train", {1000})});
  counters.Update({S(1, "train", {1010})});
  counters.Update({S(1, "train", {5})});  // restarted: keep 10, then count 5
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {15}}}));
}

TEST(StageCountersTest, WithoutBaselineFirstSnapshotCountsFully) {
  StageCounters counters(1);
  counters.Update({S(1, "train", {1000})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {1000}}}));
}

TEST(StageCountersTest, StageChangeRetiresToOldStageWithoutDoubleCounting) {
  StageCounters counters(1);
  counters.Update({S(1, "unattributed", {30})});
  counters.Update({S(1, "train", {35})});  // e.g. the configuration now names it
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"unattributed", {30}}, {"train", {0}}}));
  counters.Update({S(1, "train", {42})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"unattributed", {30}}, {"train", {7}}}));
  counters.Update({});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"unattributed", {30}}, {"train", {7}}}));
}

TEST(StageCountersTest, StagesStayOnceSeen) {
  StageCounters counters(1);
  counters.Update({S(1, "ingest", {0})});
  counters.Update({S(2, "train", {1})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"ingest", {0}}, {"train", {1}}}));
}

TEST(StageCountersTest, MalformedWidthIsPaddedOrCut) {
  StageCounters counters(3);
  counters.Update({S(1, "train", {1}), S(2, "train", {1, 2, 3, 4})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {2, 2, 3}}}));
  for (const auto& [stage, values] : Named(counters.Totals())) EXPECT_EQ(values.size(), 3u);
}

TEST(StageCountersTest, DuplicateIdInOneSnapshotCountsOnce) {
  StageCounters counters(1);
  counters.Update({S(1, "train", {10}), S(1, "train", {10})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {10}}}));
  EXPECT_EQ(counters.live_cgroups(), 1u);
}

// A walk racing a rename can list one id twice with different paths: the first sample is the
// cgroup's, the second is ignored, and nothing is counted twice when the next snapshot agrees.
TEST(StageCountersTest, DuplicateIdInOneSnapshotKeepsTheFirstSample) {
  StageCounters counters(1);
  counters.Update({S(1, "train", {10}), S(1, "validate", {25})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {10}}}));
  counters.Update({S(1, "train", {12})});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {12}}}));
}

// Cgroups of stages "a" and "b" that come, go, restart, change stage and count on, at random
// but the same for a seed: three of them act each round.
struct RandomChurn {
  explicit RandomChurn(uint64_t seed) : seed(seed) {}
  uint64_t Next() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  }
  void Round() {
    for (int i = 0; i < 3; ++i) {
      const uint64_t id = Next() % 20;
      const int action = Next() % 10;
      const std::string stage = (Next() % 2) ? "a" : "b";
      if (action == 0) {
        cgroups.erase(id);
      } else if (action == 1) {
        cgroups[id] = {stage, {Next() % 5, Next() % 5}};  // reset / recreated
      } else if (action == 2 && cgroups.count(id)) {
        cgroups[id].first = stage;  // restaged
      } else {
        auto& entry = cgroups[id];
        if (entry.second.empty()) entry = {stage, {0, 0}};
        entry.second[0] += Next() % 100;
        entry.second[1] += Next() % 3;
      }
    }
  }
  uint64_t seed;
  std::map<uint64_t, std::pair<std::string, V>> cgroups;
};

// Random churn: totals never decrease, whatever cgroups do.
TEST(StageCountersTest, TotalsNeverDecreaseUnderChurn) {
  StageCounters counters(2, /*count_from_first_snapshot=*/true);
  RandomChurn churn(12345);
  const auto& cgroups = churn.cgroups;
  Totals previous;
  for (int round = 0; round < 500; ++round) {
    churn.Round();
    std::vector<CgroupCounterSample> snapshot;
    for (const auto& [id, entry] : cgroups) snapshot.push_back(S(id, entry.first, entry.second));
    counters.Update(snapshot);
    Totals now = Named(counters.Totals());
    for (const auto& [stage, values] : previous) {
      ASSERT_TRUE(now.count(stage)) << stage;
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_GE(now[stage][i], values[i]) << "round " << round << " stage " << stage;
      }
    }
    previous = std::move(now);
  }
}

// A partial update names only what moved: the others stay live with their last values, and
// a gone one is retired with them.
TEST(StageCountersTest, PartialUpdateKeepsUnchangedCgroupsAndRetiresGoneOnes) {
  StageCounters counters(2);
  counters.Update({S(1, "train", {10, 1}), S(2, "train", {5, 2}), S(3, "eval", {7, 0})});
  counters.UpdateChanged({S(2, "train", {6, 4})}, {});
  counters.UpdateChanged({}, {});
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {16, 5}}, {"eval", {7, 0}}}));
  EXPECT_EQ(counters.live_cgroups(), 3u);
  counters.UpdateChanged({S(4, "eval", {3, 3})}, {1, 99});  // 1 died at {10, 1}; 99 unknown
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {16, 5}}, {"eval", {10, 3}}}));
  EXPECT_EQ(counters.live_cgroups(), 3u);
  counters.UpdateChanged({S(2, "train", {1, 5})}, {});  // restarted: keeps 6, counts 1 anew
  counters.UpdateChanged({S(3, "train", {8, 0})}, {});  // restaged: 7 stays with eval
  counters.UpdateChanged({S(4, "eval", {4, 3})}, {4});  // changed and gone: retired at 4
  EXPECT_EQ(Named(counters.Totals()), (Totals{{"train", {17, 6}}, {"eval", {11, 3}}}));
  EXPECT_EQ(counters.live_cgroups(), 2u);
}

// Random churn, folded from whole snapshots and from what changed between them: the same
// totals every round.
TEST(StageCountersTest, PartialUpdatesFoldAsWholeSnapshotsDo) {
  StageCounters whole(2), partial(2);
  RandomChurn churn(777);
  const auto& cgroups = churn.cgroups;
  std::map<uint64_t, std::pair<std::string, V>> before;
  for (int round = 0; round < 500; ++round) {
    churn.Round();
    std::vector<CgroupCounterSample> snapshot, changed;
    std::vector<uint64_t> gone;
    for (const auto& [id, entry] : cgroups) {
      snapshot.push_back(S(id, entry.first, entry.second));
      if (!before.contains(id) || before[id] != entry) changed.push_back(snapshot.back());
    }
    for (const auto& [id, entry] : before) {
      if (!cgroups.contains(id)) gone.push_back(id);
    }
    whole.Update(snapshot);
    partial.UpdateChanged(changed, gone);
    ASSERT_EQ(Named(partial.Totals()), Named(whole.Totals())) << "round " << round;
    ASSERT_EQ(partial.live_cgroups(), whole.live_cgroups()) << "round " << round;
    before = cgroups;
  }
}

// Preemptions are folded per (preempted, preempting) pair of stage ids, and a pair is kept
// or dropped as a whole.
TEST(StageCountersTest, StagePairsAreFoldedAndForgottenAsPairs) {
  using PairTotals = std::map<StagePair, std::vector<uint64_t>>;
  StageCountersOf<StagePair> pairs(1);
  pairs.Update({{1, {1, 3}, {4}}, {2, {1, 2}, {5}}, {3, {2, 3}, {1}}});
  pairs.Update({{2, {1, 2}, {7}}, {3, {2, 3}, {2}}});  // pair key 1 retired at 4
  EXPECT_EQ(pairs.Totals(), (PairTotals{{{1, 3}, {4}}, {{1, 2}, {7}}, {{2, 3}, {2}}}));
  pairs.KeepStages([](const StagePair& p) { return p.second == 3; });
  EXPECT_EQ(pairs.Totals(), (PairTotals{{{1, 3}, {4}}, {{2, 3}, {2}}}));
  EXPECT_EQ(pairs.live_cgroups(), 1u);
}

}  // namespace
}  // namespace stagewatch
