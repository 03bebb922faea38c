// A stage's page faults from its tops' hierarchical memory.stat: nested stages taken off,
// cgroups that come and go folded so totals never go backwards.
#include "sampler/memcg_faults.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

constexpr StageId kTrain = 1, kEval = 2, kIngest = 3;

TopFaultReading Top(uint64_t id, std::string path, StageId stage, uint64_t pgfault,
                    uint64_t pgmajfault) {
  return {.top = {.id = id, .path = std::move(path), .stage = {.id = stage}},
          .pgfault = pgfault,
          .pgmajfault = pgmajfault};
}

const absl::flat_hash_set<StageId> kKnown = {kTrain, kEval};

StageFaults Of(const MemcgFaults& f, StageId stage) {
  auto totals = f.Totals();
  auto it = totals.find(stage);
  return it == totals.end() ? StageFaults{.minor = 999999, .major = 999999} : it->second;
}

TEST(MemcgFaultsTest, MinorIsEveryFaultLessTheMajorOnes) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 1000, 30)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 970u);
  EXPECT_EQ(Of(f, kTrain).major, 30u);
}

TEST(MemcgFaultsTest, AStageNestedBeneathAnotherIsTakenOffItsCount) {
  MemcgFaults f;
  // /train's count includes /train/eval's: its own are 1000 - 400.
  f.Update({Top(10, "/train", kTrain, 1000, 0), Top(11, "/train/x/eval", kEval, 400, 0)},
           kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 600u);
  EXPECT_EQ(Of(f, kEval).minor, 400u);
}

TEST(MemcgFaultsTest, ANestedStageThatGoesStaysTakenOffWhileTheKernelKeepsItsCount) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 1000, 0), Top(11, "/train/eval", kEval, 400, 0)}, kKnown);
  // eval's cgroup is removed; the kernel keeps its 400 in /train's hierarchical count.
  f.Update({Top(10, "/train", kTrain, 1100, 0)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 700u);
  EXPECT_EQ(Of(f, kEval).minor, 400u);  // folded, not lost
}

TEST(MemcgFaultsTest, ATopReplacedInOneSampleIsFoldedAndItsSuccessorNested) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 1000, 0), Top(11, "/train/eval", kEval, 400, 0)}, kKnown);
  // As many tops as before, not the same ones: eval's went (its 400 stay in /train's count)
  // and another stage's came beneath /train.
  f.Update({Top(10, "/train", kTrain, 1300, 0), Top(12, "/train/ingest", kIngest, 200, 0)},
           {kTrain, kEval, kIngest});
  EXPECT_EQ(Of(f, kTrain).minor, 700u) << "1300 less the new nested 200 and the departed 400";
  EXPECT_EQ(Of(f, kEval).minor, 400u);
  EXPECT_EQ(Of(f, kIngest).minor, 200u);
}

TEST(MemcgFaultsTest, ATopThatGoesAndComesBackUnderANewIdNeverGoesBackwards) {
  MemcgFaults f;
  f.Update({Top(10, "/train/run1", kTrain, 500, 5)}, kKnown);
  f.Update({Top(12, "/train/run2", kTrain, 20, 0)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 515u);
  EXPECT_EQ(Of(f, kTrain).major, 5u);
}

TEST(MemcgFaultsTest, ATopNotReadThisSampleKeepsItsCount) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 500, 0)}, kKnown);
  TopFaultReading unread = Top(10, "/train", kTrain, 0, 0);
  unread.pgfault = unread.pgmajfault = std::nullopt;
  f.Update({unread}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 500u);
  f.Update({Top(10, "/train", kTrain, 510, 0)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 510u);
}

TEST(MemcgFaultsTest, AFaultBetweenTwoReadsShowsLateNeverTwice) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 1000, 0), Top(11, "/train/eval", kEval, 400, 0)}, kKnown);
  // /train is read first, then eval faults 100 times, then eval is read: /train's own count
  // would seem to drop by 100; it stays, and moves again once it has really grown.
  f.Update({Top(10, "/train", kTrain, 1000, 0), Top(11, "/train/eval", kEval, 500, 0)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 600u);
  f.Update({Top(10, "/train", kTrain, 1150, 0), Top(11, "/train/eval", kEval, 500, 0)}, kKnown);
  EXPECT_EQ(Of(f, kTrain).minor, 650u);
  EXPECT_EQ(Of(f, kEval).minor, 500u);
}

TEST(MemcgFaultsTest, NestedTopsAreTheOnesThatEncloseOrLieBeneathAnother) {
  std::vector<NamedCgroup> tops = {{.id = 10, .path = "/train", .stage = {.id = kTrain}},
                                   {.id = 11, .path = "/train/a/eval", .stage = {.id = kEval}},
                                   {.id = 12, .path = "/other", .stage = {.id = kTrain}},
                                   {.id = 13, .path = "/trainee", .stage = {.id = kEval}}};
  EXPECT_EQ(NestedTops(tops), (absl::flat_hash_set<uint64_t>{10, 11}));
}

TEST(MemcgFaultsTest, AStageWithoutTheMemoryControllerIsUncoveredAndHasNoFigures) {
  MemcgFaults f;
  TopFaultReading none = Top(11, "/eval", kEval, 0, 0);
  none.pgfault = none.pgmajfault = std::nullopt;
  f.Update({Top(10, "/train", kTrain, 100, 0), none}, kKnown);
  EXPECT_EQ(f.uncovered(), StageSet{kEval});
  EXPECT_FALSE(f.Totals().contains(kEval));
  EXPECT_TRUE(f.Totals().contains(kTrain));
}

TEST(MemcgFaultsTest, AForgottenStageIsDropped) {
  MemcgFaults f;
  f.Update({Top(10, "/train", kTrain, 100, 0)}, kKnown);
  f.Update({}, {kEval});
  EXPECT_FALSE(f.Totals().contains(kTrain));
}

}  // namespace
}  // namespace stagewatch
