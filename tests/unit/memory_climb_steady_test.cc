// A stage whose memory always grows at the same pace (a cache filling, a training job
// appending) has learned that pace as normal: the memory climb detector must stay quiet for it,
// and fire only above the usual rate, never merely above "usual minus the spread".
#include "detectors/memory_climb.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

constexpr double kMiB = 1024.0 * 1024;

TEST(MemoryClimbSteadyTest, GrowthAtTheLearnedRateNeverFires) {
  MemoryClimbDetector climb;
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  // 20 MiB/s, so every 30 s window grows 600 MiB, far over the growth floor, with a small
  // wiggle of period 7 s that the 30 s window does not cancel: the baseline has a spread.
  for (int i = 0; i < 1800; ++i) {
    const double usage = 1024 * kMiB + i * 20 * kMiB + (i % 7) * kMiB;
    ASSERT_FALSE(climb.Update({t0 + absl::Seconds(i), usage}).active)
        << "fired at " << i << " s: " << climb.state().summary;
  }
  // Then a real climb, five times the usual pace, does fire.
  double usage = 1024 * kMiB + 1800 * 20 * kMiB;
  bool fired = false;
  for (int i = 1800; i < 1830 && !fired; ++i) {
    fired = climb.Update({t0 + absl::Seconds(i), usage += 100 * kMiB}).active;
  }
  EXPECT_TRUE(fired);
}

}  // namespace
}  // namespace stagewatch
