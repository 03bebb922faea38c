// The BPF bucket helpers (bpf/bits.bpf.h) built for the host: every edge of log2_floor,
// log2_ceil and hist_add, and a duration followed from the kernel's slot to the exported `le`
// bucket, so a value sits in the first bucket whose upper edge is at or above it, never below.
#include <linux/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "exporters/metrics/metric_builders.h"
#include "gtest/gtest.h"

// What the BPF headers get from vmlinux.h and bpf_helpers.h, for a host build.
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "bpf/bits.bpf.h"

namespace stagewatch {
namespace {

constexpr uint64_t kUnitNs = 1ull << HIST_UNIT_SHIFT;
constexpr double kUnitSeconds = kUnitNs * 1e-9;

log2_hist HistOf(const std::vector<uint64_t>& values_ns) {
  log2_hist h{};
  for (uint64_t v : values_ns) hist_add(&h, v);
  return h;
}

// The one slot (or -1 for `above`) a single value lands in.
int SlotOf(uint64_t ns) {
  const log2_hist h = HistOf({ns});
  for (int i = 0; i < HIST_SLOTS; i++) {
    if (h.slots[i]) return i;
  }
  EXPECT_EQ(h.above, 1u) << ns << " ns landed nowhere";
  return -1;
}

TEST(Log2Test, FloorAtEveryPowerOfTwoEdge) {
  EXPECT_EQ(log2_floor(1), 0u);
  EXPECT_EQ(log2_floor(2), 1u);
  EXPECT_EQ(log2_floor(3), 1u);
  for (unsigned k = 1; k < 64; k++) {
    const uint64_t p = 1ull << k;
    EXPECT_EQ(log2_floor(p - 1), k - 1) << "2^" << k << "-1";
    EXPECT_EQ(log2_floor(p), k) << "2^" << k;
    EXPECT_EQ(log2_floor(p + 1), k) << "2^" << k << "+1";
  }
  EXPECT_EQ(log2_floor(UINT64_MAX), 63u);
}

TEST(Log2Test, CeilAtEveryPowerOfTwoEdge) {
  EXPECT_EQ(log2_ceil(0), 0u);
  EXPECT_EQ(log2_ceil(1), 0u);
  EXPECT_EQ(log2_ceil(2), 1u);
  EXPECT_EQ(log2_ceil(3), 2u);
  for (unsigned k = 2; k < 64; k++) {
    const uint64_t p = 1ull << k;
    EXPECT_EQ(log2_ceil(p - 1), k) << "2^" << k << "-1";
    EXPECT_EQ(log2_ceil(p), k) << "2^" << k;
    EXPECT_EQ(log2_ceil(p + 1), k + 1) << "2^" << k << "+1";
  }
  EXPECT_EQ(log2_ceil(UINT64_MAX), 64u);
}

TEST(HistAddTest, SlotZeroHoldsUpToOneUnit) {
  EXPECT_EQ(SlotOf(0), 0);
  EXPECT_EQ(SlotOf(1), 0);
  EXPECT_EQ(SlotOf(kUnitNs - 1), 0);
  EXPECT_EQ(SlotOf(kUnitNs), 0);
  EXPECT_EQ(SlotOf(kUnitNs + 1), 1);
}

TEST(HistAddTest, SlotIHoldsValuesAboveItsLowerEdgeUpToItsUpperEdge) {
  for (int i = 1; i < HIST_SLOTS; i++) {
    const uint64_t edge = kUnitNs << i;  // slot i's upper edge
    EXPECT_EQ(SlotOf(edge / 2), i - 1) << "slot " << i << "'s lower edge";
    EXPECT_EQ(SlotOf(edge / 2 + 1), i) << "just above slot " << i << "'s lower edge";
    EXPECT_EQ(SlotOf(edge - 1), i) << "just below slot " << i << "'s upper edge";
    EXPECT_EQ(SlotOf(edge), i) << "slot " << i << "'s upper edge";
  }
}

TEST(HistAddTest, TheTopSlotEndsAtItsEdgeAndAboveTakesTheRest) {
  const uint64_t top_edge = kUnitNs << (HIST_SLOTS - 1);
  EXPECT_EQ(top_edge, 1ull << 35);  // 34.4 s, as histogram.h says
  EXPECT_EQ(SlotOf(top_edge), HIST_SLOTS - 1);
  EXPECT_EQ(SlotOf(top_edge + 1), -1);
  EXPECT_EQ(SlotOf(top_edge * 2), -1);
  EXPECT_EQ(SlotOf(UINT64_MAX / 2), -1);
}

TEST(HistAddTest, SumIsInNanosecondsAndCountsEveryValueOnce) {
  const std::vector<uint64_t> values = {0, 1, kUnitNs, kUnitNs + 1, 5'000'000, 1ull << 40};
  const log2_hist h = HistOf(values);
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  EXPECT_EQ(h.sum, sum);
  uint64_t count = h.above;
  for (uint64_t n : h.slots) count += n;
  EXPECT_EQ(count, values.size());
  EXPECT_EQ(h.above, 1u);
}

// A duration through hist_add and then AddLog2Histogram, as the collectors export it: the
// first cumulative bucket that holds it has le >= the duration, and the one before has le
// below it. A value exactly on an edge counts in that edge's bucket (le is inclusive).
TEST(BucketPlacementTest, ADurationLandsInTheFirstBucketWhoseLeIsAtOrAboveIt) {
  std::vector<uint64_t> durations = {0, 1, 1000, kUnitNs, kUnitNs + 1, 1'500'000, 6'000'000,
                                     250'000'000, 1'000'000'000, 30'000'000'000ull};
  for (int i = 0; i < HIST_SLOTS; i++) {
    durations.push_back((kUnitNs << i) - 1);
    durations.push_back(kUnitNs << i);
    durations.push_back((kUnitNs << i) + 1);
  }
  for (uint64_t ns : durations) {
    const log2_hist h = HistOf({ns});
    auto family = exporters::HistogramFamily("d_seconds", "d");
    exporters::AddLog2Histogram(&family, {}, std::vector<uint64_t>(h.slots, h.slots + HIST_SLOTS),
                                h.sum >> HIST_UNIT_SHIFT, kUnitSeconds, h.above);
    const auto& buckets = family.metric.at(0).histogram.bucket;
    ASSERT_EQ(buckets.size(), HIST_SLOTS + 1u);
    size_t first = 0;
    while (first < buckets.size() && buckets[first].cumulative_count == 0) first++;
    ASSERT_LT(first, buckets.size()) << ns << " ns is in no bucket, not even +Inf";
    const double seconds = ns * 1e-9;
    // Edges are 2^i units exactly, so a duration on an edge compares equal in doubles.
    EXPECT_GE(buckets[first].upper_bound, seconds) << ns << " ns sits below its bucket's le";
    if (first > 0) {
      EXPECT_LT(buckets[first - 1].upper_bound, seconds) << ns << " ns could sit one bucket lower";
    }
    EXPECT_EQ(family.metric.at(0).histogram.sample_count, 1u);
  }
}

// The exported sum is the ns sum in seconds: a slot-unit or 1024x slip fails here.
TEST(BucketPlacementTest, TheExportedSumIsTheDurationInSeconds) {
  const log2_hist h = HistOf({3'000'000, 7'000'000});  // 10 ms
  auto family = exporters::HistogramFamily("d_seconds", "d");
  exporters::AddLog2Histogram(&family, {}, std::vector<uint64_t>(h.slots, h.slots + HIST_SLOTS),
                              h.sum >> HIST_UNIT_SHIFT, kUnitSeconds, h.above);
  EXPECT_NEAR(family.metric.at(0).histogram.sample_sum, 0.010, kUnitSeconds);
}

}  // namespace
}  // namespace stagewatch
