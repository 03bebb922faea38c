#include "anomaly/anomaly_engine.h"

#include <cstdio>
#include <vector>

#include "bpf/histogram.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const Stage kTrain{7, "train", "nightly"};
const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

TEST(Log2HistogramQuantileTest, TakesTheQuantileOfTheIncreaseOnly) {
  std::vector<uint64_t> older(HIST_SLOTS, 0), newer(HIST_SLOTS, 0);
  older[2] = 1000;  // old waits that must not count
  newer[2] = 1000;
  newer[5] = 98;
  newer[9] = 2;
  // 100 new waits: the 99th lies in slot 9, whose edge is 2^9 * 1.024 us.
  EXPECT_DOUBLE_EQ(*Log2HistogramQuantile(older, newer, 0.99), 512 * 1.024e-6);
  EXPECT_DOUBLE_EQ(*Log2HistogramQuantile(older, newer, 0.5), 32 * 1.024e-6);
  EXPECT_FALSE(Log2HistogramQuantile(older, older, 0.99).has_value());
}

// A stage that waited little for five minutes, then 25 waits of about 20 s: its starvation
// summary says how many of the window's waits were new tasks' first (a fork storm's start-up)
// and how much of the time waited was theirs.
std::string StarvationSummary(uint64_t first_of_the_long_waits) {
  std::vector<AnomalyChange> changes;
  AnomalyEngine engine(AnomalyConfig{}, [&](const AnomalyChange& c) { changes.push_back(c); });
  RunqWaits waits{.slots = std::vector<uint64_t>(HIST_SLOTS + 1, 0)};
  absl::Time t = kStart;
  for (int i = 0; i < 120; i++, t += absl::Milliseconds(2500)) {
    if (i == 60) {  // 25 waits in slot 25 (17.2 to 34.4 s)
      waits.slots[25] += 25;
      waits.sum_ns += 25 * 20'000'000'000ull;
      waits.first_waits += first_of_the_long_waits;
      waits.first_wait_ns += first_of_the_long_waits * 20'000'000'000ull;
    }
    waits.slots[2] += 10;  // ten waits of 4 us every reading
    waits.sum_ns += 10 * 4000;
    engine.OnRunqLatency(kTrain, t, waits);
  }
  for (const AnomalyChange& c : changes) {
    if (c.rule == AnomalyRule::kCpuStarvation && c.active) return c.summary;
  }
  return "";
}

TEST(AnomalyEngineTest, AStarvationSummarySaysHowMuchOfTheWaitingWasNewTasksFirstWaits) {
  const std::string storm = StarvationSummary(23);
  std::printf("%s\n", storm.c_str());
  EXPECT_NE(storm.find("p99 run-queue latency at 34.36 s"), std::string::npos) << storm;
  // 25 long waits and the ten of each of the window's readings.
  EXPECT_NE(storm.find("waits, 23 new tasks' first (460.00 s of 500.00 s)"), std::string::npos)
      << storm;
  const std::string behind_work = StarvationSummary(0);
  EXPECT_NE(behind_work.find("; none of the window's"), std::string::npos) << behind_work;
  EXPECT_EQ(behind_work.find("new tasks' first ("), std::string::npos) << behind_work;
}

// A forgotten stage's state goes with it; a stage discovered later under a new id starts clean,
// even with the old one's name.
TEST(AnomalyEngineTest, StatesOfForgottenStagesAreDropped) {
  AnomalyEngine engine(AnomalyConfig{}, [](const AnomalyChange&) {});
  const Stage eval{8, "eval", ""};
  engine.OnOomKill(kTrain, kStart, "killed");
  engine.OnOomKill(eval, kStart, "killed");
  engine.KeepStages({eval.id});
  EXPECT_EQ(engine.Snapshot().size(), 1u);
  EXPECT_TRUE(engine.Snapshot().contains(eval.id));
  const Stage train_again{9, "train", "nightly"};
  engine.OnMajorFaults(train_again, kStart + absl::Seconds(1), 0);
  const size_t oom = static_cast<size_t>(AnomalyRule::kOomKill);
  EXPECT_EQ(engine.Snapshot().at(train_again.id).fired[oom], 0u);
  EXPECT_FALSE(engine.Snapshot().contains(kTrain.id));
}

TEST(AnomalyEngineTest, OomKillFiresAtOnceCountsEveryKillAndEndsAfterItsHold) {
  std::vector<AnomalyChange> changes;
  AnomalyConfig config;
  config.oom_kill_hold = absl::Minutes(1);
  AnomalyEngine engine(config, [&](const AnomalyChange& c) { changes.push_back(c); });

  engine.OnOomKill(kTrain, kStart, "python (pid 7) was OOM-killed");
  engine.OnOomKill(kTrain, kStart + absl::Seconds(10), "python (pid 8) was OOM-killed");
  ASSERT_EQ(changes.size(), 2u);  // each kill pages, with its own figures
  EXPECT_TRUE(changes[0].active);
  EXPECT_EQ(changes[0].stage.pipeline, "nightly");
  const size_t oom = static_cast<size_t>(AnomalyRule::kOomKill);
  EXPECT_TRUE(engine.Snapshot()[kTrain.id].active[oom]);
  EXPECT_EQ(engine.Snapshot()[kTrain.id].fired[oom], 2u);

  engine.Tick(kStart + absl::Seconds(60));  // the hold runs from the last kill
  EXPECT_TRUE(engine.Snapshot()[kTrain.id].active[oom]);
  engine.Tick(kStart + absl::Seconds(71));
  EXPECT_FALSE(engine.Snapshot()[kTrain.id].active[oom]);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_FALSE(changes[2].active);
}

TEST(AnomalyEngineTest, ASteadyStageThenAStepFiresMemoryClimbOnceAndSetsAnEta) {
  std::vector<AnomalyChange> changes;
  AnomalyConfig config;
  config.memory_climb.warmup = absl::Seconds(20);
  config.limit_eta.warmup = absl::Seconds(20);
  AnomalyEngine engine(config, [&](const AnomalyChange& c) { changes.push_back(c); });
  const double gib = 1 << 30;
  absl::Time t = kStart;
  for (int i = 0; i < 120; i++, t += absl::Seconds(1)) {
    engine.OnMemory(kTrain, t, 2 * gib + (i % 2) * 1e6, 8 * gib, std::nullopt);
  }
  EXPECT_TRUE(changes.empty());
  for (int i = 0; i < 20; i++, t += absl::Seconds(1)) {
    engine.OnMemory(kTrain, t, 2 * gib + i * 0.2 * gib, 8 * gib, std::nullopt);
  }
  int climbs = 0;
  for (const AnomalyChange& c : changes) climbs += c.rule == AnomalyRule::kMemoryClimb && c.active;
  EXPECT_EQ(climbs, 1);
  EXPECT_TRUE(engine.Snapshot()[kTrain.id].limit_eta_seconds.has_value());
}

TEST(AnomalyEngineTest, DisabledDetectorsNeverFire) {
  std::vector<AnomalyChange> changes;
  AnomalyConfig config;
  config.oom_kill = false;
  AnomalyEngine engine(config, [&](const AnomalyChange& c) { changes.push_back(c); });
  engine.OnOomKill(kTrain, kStart, "killed");
  EXPECT_TRUE(changes.empty());
}

}  // namespace
}  // namespace stagewatch
