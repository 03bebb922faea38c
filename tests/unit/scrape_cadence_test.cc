#include "sampler/collect_cadence.h"

#include <gtest/gtest.h>

#include <vector>

namespace stagewatch {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

// The seconds, of 0..until sampled every second, at which the cadence was due; `scrapes` are
// told as they come, before that second's sample.
std::vector<int> DueSeconds(ScrapeCadence& cadence, int until, const std::vector<int>& scrapes) {
  std::vector<int> due;
  size_t next_scrape = 0;
  for (int s = 0; s <= until; s++) {
    while (next_scrape < scrapes.size() && scrapes[next_scrape] <= s) {
      cadence.Scraped(kStart + absl::Seconds(scrapes[next_scrape++]));
    }
    if (cadence.Due(kStart + absl::Seconds(s))) due.push_back(s);
  }
  return due;
}

TEST(ScrapeCadenceTest, WithoutTwoScrapesItIsDueEveryInterval) {
  ScrapeCadence cadence(absl::Seconds(5));
  EXPECT_EQ(DueSeconds(cadence, 20, {3}), (std::vector<int>{0, 5, 10, 15, 20}));
}

TEST(ScrapeCadenceTest, ScrapesEvery15sGetOneCollectionEachAtMostAnIntervalOld) {
  ScrapeCadence cadence(absl::Seconds(5));
  const std::vector<int> due = DueSeconds(cadence, 61, {0, 15, 30, 45, 60});
  // Every interval until the second scrape told the period; then 10 s after each scrape.
  EXPECT_EQ(due, (std::vector<int>{0, 5, 10, 25, 40, 55}));
}

TEST(ScrapeCadenceTest, ScrapesFasterThanTheIntervalKeepTheInterval) {
  ScrapeCadence cadence(absl::Seconds(5));
  std::vector<int> scrapes;
  for (int s = 0; s <= 20; s++) scrapes.push_back(s);
  EXPECT_EQ(DueSeconds(cadence, 20, scrapes), (std::vector<int>{0, 5, 10, 15, 20}));
}

TEST(ScrapeCadenceTest, ScrapesThatStopLeaveItDueEveryIntervalAfterAPeriod) {
  ScrapeCadence cadence(absl::Seconds(5));
  // Scrapes every 15 s until 30 s, then none: due at 40 (10 s after), then from 45 on as if
  // the next scrape were late, every interval.
  const std::vector<int> due = DueSeconds(cadence, 60, {0, 15, 30});
  EXPECT_EQ(due, (std::vector<int>{0, 5, 10, 25, 40, 45, 50, 55, 60}));
}

}  // namespace
}  // namespace stagewatch
