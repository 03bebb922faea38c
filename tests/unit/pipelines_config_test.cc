// The `pipelines:` section (night_starts, deadline per pipeline) and the nights they make:
// NightOf on the local clock, just before and after a night starts and across clock changes,
// and each night's deadline.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "config/config.h"
#include "runs/pipeline_run.h"
#include "runs_test_util.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::LoadZone;

absl::StatusOr<Config> Parse(const std::string& yaml) {
  return ParseConfig(yaml, "cfg.yaml", CollectorFlagNames());
}

absl::Time Local(absl::TimeZone zone, int y, int mo, int d, int h, int mi, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), zone);
}

TEST(PipelinesConfigTest, NoneByDefaultAndEachKeyIsRead) {
  const absl::StatusOr<Config> shipped = DefaultConfig(CollectorFlagNames());
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  EXPECT_TRUE(shipped->pipelines.empty());

  const absl::StatusOr<Config> config = Parse(
      "pipelines:\n  nightly:\n    night_starts: \"18:30\"\n    deadline: 06:00\n"
      "  hourly.v2:\n  weekly:\n    deadline: \"23:59\"\n");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->pipelines.size(), 3u);
  const PipelineConfig& nightly = config->pipelines.at("nightly");
  EXPECT_EQ(nightly.night_starts, absl::Hours(18) + absl::Minutes(30));
  EXPECT_EQ(nightly.deadline, absl::Hours(6));
  EXPECT_EQ(nightly.line, 2);
  const PipelineConfig& hourly = config->pipelines.at("hourly.v2");
  EXPECT_EQ(hourly.night_starts, absl::Hours(12));  // the default: a night is 12:00 to 12:00
  EXPECT_FALSE(hourly.deadline);
  EXPECT_EQ(config->pipelines.at("weekly").deadline, absl::Hours(23) + absl::Minutes(59));
}

TEST(PipelinesConfigTest, BadValuesAreReportedAtTheirLineAndColumn) {
  const absl::StatusOr<Config> config = Parse(
      "pipelines:\n"
      "  nightly:\n"
      "    deadline: \"25:00\"\n"
      "    night_starts: 6am\n"
      "  9lives:\n"
      "    deadline: \"06:00\"\n"
      "  weekly:\n"
      "    deadline:\n"
      "    window: 3h\n"
      "  monthly: [1, 2]\n");
  ASSERT_FALSE(config.ok());
  const std::string m(config.status().message());
  EXPECT_THAT(m, HasSubstr("cfg.yaml:3:15: pipelines.nightly.deadline \"25:00\" is not a time "
                           "of day; write HH:MM on a 24-hour clock, e.g. 12:00 or 06:30"));
  EXPECT_THAT(m, HasSubstr("cfg.yaml:4:19: pipelines.nightly.night_starts \"6am\" is not a "
                           "time of day"));
  EXPECT_THAT(m, HasSubstr("cfg.yaml:5:3: pipeline name \"9lives\" is not valid; use letters, "
                           "digits"));
  EXPECT_THAT(m, HasSubstr("cfg.yaml:8:5: pipelines.weekly.deadline needs a time of day"));
  EXPECT_THAT(m, HasSubstr("cfg.yaml:9:5: unknown key \"window\" in pipelines.weekly"));
  EXPECT_THAT(m, HasSubstr("cfg.yaml:10:12: pipelines.monthly must be a map of keys"));

  const absl::StatusOr<Config> list = Parse("pipelines: [nightly]\n");
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(list.status().message(), HasSubstr("cfg.yaml:1:12: pipelines must be a map from "
                                                 "pipeline name to its settings"));
}

TEST(PipelinesConfigTest, TimesOfDayParseAsTheyRead) {
  for (const char* good : {"0:00", "00:00", "6:05", "12:00", "23:59"}) {
    EXPECT_TRUE(ParseTimeOfDay(good, "t").ok()) << good;
  }
  for (const char* bad : {"", "12", "24:00", "12:60", "12:5", "-1:00", "+1:00", "12:00:00",
                          "1200", " 12:00", "123:00", "12h"}) {
    EXPECT_FALSE(ParseTimeOfDay(bad, "t").ok()) << bad;
  }
  EXPECT_EQ(FormatTimeOfDay(*ParseTimeOfDay("6:05", "t")), "06:05");
}

TEST(NightOfTest, ANightRunsFromItsStartToTheSameTimeTheNextDay) {
  const absl::TimeZone berlin = LoadZone("Europe/Berlin");
  const absl::Duration noon = absl::Hours(12);
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 11, 59, 59), noon, berlin), "2026-12-02");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 12, 0, 0), noon, berlin), "2026-12-03");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 23, 30), noon, berlin), "2026-12-03");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 4, 3, 0), noon, berlin), "2026-12-03");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 4, 11, 59, 59), noon, berlin), "2026-12-03");
  // In the zone given, not UTC: 12:30 in Berlin is 11:30 UTC.
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 12, 30), noon, absl::UTCTimeZone()),
            "2026-12-02");
  // Nights from 18:00.
  const absl::Duration evening = absl::Hours(18);
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 17, 59), evening, berlin), "2026-12-02");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 12, 3, 18, 0), evening, berlin), "2026-12-03");
}

TEST(NightOfTest, OnTheDaysTheClocksChangeANightStillStartsAtItsTimeOfDay) {
  const absl::TimeZone berlin = LoadZone("Europe/Berlin");
  const absl::Duration noon = absl::Hours(12);
  // 2026-03-29: clocks go from 02:00 to 03:00, so 12:30 is 11.5 hours after midnight.
  EXPECT_EQ(NightOf(Local(berlin, 2026, 3, 29, 12, 30), noon, berlin), "2026-03-29");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 3, 29, 11, 59), noon, berlin), "2026-03-28");
  // 2026-10-25: clocks go from 03:00 back to 02:00, so 11:30 is 12.5 hours after midnight.
  EXPECT_EQ(NightOf(Local(berlin, 2026, 10, 25, 11, 30), noon, berlin), "2026-10-24");
  EXPECT_EQ(NightOf(Local(berlin, 2026, 10, 25, 12, 0), noon, berlin), "2026-10-25");
  // Nights from 01:00, on the night the clocks go back.
  EXPECT_EQ(NightOf(Local(berlin, 2026, 10, 25, 0, 59), absl::Hours(1), berlin), "2026-10-24");
}

TEST(NightOfTest, TheDeadlineIsTheFirstSuchTimeAfterTheNightStarted) {
  const absl::TimeZone berlin = LoadZone("Europe/Berlin");
  const absl::Time run = Local(berlin, 2026, 12, 3, 22, 15);
  // Nights from 12:00: 06:00 is the next morning; 18:00 the same evening.
  EXPECT_EQ(NightDeadline(run, absl::Hours(12), absl::Hours(6), berlin),
            Local(berlin, 2026, 12, 4, 6, 0));
  EXPECT_EQ(NightDeadline(run, absl::Hours(12), absl::Hours(18), berlin),
            Local(berlin, 2026, 12, 3, 18, 0));
  // A run after midnight is still of the night before.
  EXPECT_EQ(NightDeadline(Local(berlin, 2026, 12, 4, 2, 0), absl::Hours(12), absl::Hours(6),
                          berlin),
            Local(berlin, 2026, 12, 4, 6, 0));
  // A deadline at the night's start is a whole night after it.
  EXPECT_EQ(NightDeadline(run, absl::Hours(12), absl::Hours(12), berlin),
            Local(berlin, 2026, 12, 4, 12, 0));
}

TEST(NightOfTest, ADiscoveredRunJoinsTheNightOfItsPipeline) {
  const absl::TimeZone zone = absl::UTCTimeZone();
  PipelinesConfig pipelines;
  pipelines["nightly"].night_starts = absl::Hours(20);
  const absl::Time at = absl::FromCivil(absl::CivilSecond(2026, 12, 3, 19, 0, 0), zone);
  EXPECT_EQ(DiscoveredPipelineRun(pipelines, "nightly", at, zone), "2026-12-02");
  EXPECT_EQ(DiscoveredPipelineRun(pipelines, "other", at, zone), "2026-12-03");  // from 12:00
  EXPECT_EQ(DiscoveredPipelineRun(pipelines, "", at, zone), "");
}

TEST(PipelineNameTest, APipelineNameIsAPlainName) {
  EXPECT_TRUE(CheckPipelineName("nightly").ok());
  EXPECT_TRUE(CheckPipelineName("_etl.v2-a").ok());
  for (const char* bad : {"", "9lives", "night ly", "a/b", "nächtlich"}) {
    EXPECT_FALSE(CheckPipelineName(bad).ok()) << bad;
  }
  EXPECT_THAT(std::string(CheckPipelineName("a/b").message()), Not(HasSubstr("stage")));
}

}  // namespace
}  // namespace stagewatch
