// Pipeline runs in a real SQLite ledger: the list (grouped, newest first, paged, each with its
// worst verdict), one pipeline run's runs, where a run's points show pressure; and a pipeline
// run's report: its verdict, its wall against its clean nights, its deadline, and which runs'
// excess made it longer; `stagewatch pipelines list|show`.
#include <memory>

#include "app/pipelines_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/pipeline_report.h"
#include "runs_cli_runner.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::WatchedRun;

absl::Time Utc(int day, int h, int m, double s = 0) {
  return absl::FromCivil(absl::CivilSecond(2026, 12, 1, h, m, 0), absl::UTCTimeZone()) +
         absl::Hours(24 * (day - 1)) + absl::Seconds(s);
}

// ingest → features → train ∥ validate, from 22:00 UTC on day `day` (0 is November 30).
struct Night {
  std::string pipeline = "nightly";
  int day = 1;
  double ingest = 10, features = 10, train = 40, validate = 30;
  double train_queued = 0, validate_queued = 0;
  bool validate_open = false;
};

class PipelineRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Ledger>> l = Ledger::Open(path_);
    ASSERT_TRUE(l.ok()) << l.status();
    ledger_ = *std::move(l);
  }

  void Record(const RunRecord& r) {
    ASSERT_TRUE(ledger_->BeginRun(r.start).ok());
    if (r.end) ASSERT_TRUE(ledger_->EndRun(r.start.id, *r.end).ok());
    if (r.agent_observed) ASSERT_TRUE(ledger_->AddAgentFacts(r.start.id, r.agent).ok());
  }

  RunRecord Run(const Night& n, const std::string& stage, double from, double wall,
                double queued) {
    const std::string night = absl::FormatCivilTime(absl::CivilDay(2026, 12, n.day));
    RunRecord r = WatchedRun(absl::StrCat(n.pipeline, "-", stage, "-", night), stage,
                             Utc(n.day, 22, 0, from), wall);
    r.start.pipeline = n.pipeline;
    r.start.pipeline_run = night;
    if (queued > 0) {
      // The same work as usual, waiting for a CPU for `queued` of its wall time.
      r.end->facts.cpu_seconds = wall - queued;
      r.agent.run_queue_wait_seconds = queued;
    }
    return r;
  }

  void RecordNight(const Night& n) {
    Record(Run(n, "ingest", 0, n.ingest, 0));
    Record(Run(n, "features", n.ingest, n.features, 0));
    const double both = n.ingest + n.features;
    Record(Run(n, "train", both, n.train, n.train_queued));
    RunRecord validate = Run(n, "validate", both, n.validate, n.validate_queued);
    if (n.validate_open) validate.end.reset();
    Record(validate);
  }

  // Nov 30 degraded (validate waited), Dec 1-3 clean, Dec 4 slower: train waited 30 s for a
  // CPU and ended last; validate took 30 s longer too, but ended before train did.
  void RecordNights() {
    RecordNight({.day = 0, .validate = 40, .validate_queued = 10});
    for (int day = 1; day <= 3; ++day) RecordNight({.day = day});
    RecordNight({.day = 4, .train = 70, .validate = 60, .train_queued = 30});
  }

  absl::StatusOr<std::optional<PipelineRunReport>> Report(const std::string& run,
                                                          const PipelineConfig* config = nullptr,
                                                          absl::Time now = Utc(20, 0, 0)) {
    return ReportPipelineRun(*ledger_, "nightly", run, RunsConfig{}, config, now,
                             absl::UTCTimeZone());
  }

  std::vector<std::string> Listed(const PipelineRunFilter& filter) {
    absl::StatusOr<PipelineRunPage> page = ledger_->ListPipelineRuns(filter);
    EXPECT_TRUE(page.ok()) << page.status();
    std::vector<std::string> out;
    for (const PipelineRunSummary& p : page->runs) {
      out.push_back(p.pipeline + "/" + p.pipeline_run);
    }
    return out;
  }

  testing::TempDir dir_;
  std::string path_ = dir_.file("ledger.db");
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(PipelineRunsTest, PipelineRunsAreListedNewestFirstAPageAtATime) {
  RecordNights();
  RecordNight({.pipeline = "weekly", .day = 2});
  RunRecord alone = WatchedRun("alone", "train", Utc(5, 1, 0), 5);  // of no pipeline run
  alone.start.pipeline = "nightly";
  Record(alone);

  absl::StatusOr<PipelineRunPage> page = ledger_->ListPipelineRuns({});
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->runs.size(), 6u);
  EXPECT_FALSE(page->more);
  const PipelineRunSummary& newest = page->runs[0];
  EXPECT_EQ(newest.pipeline, "nightly");
  EXPECT_EQ(newest.pipeline_run, "2026-12-04");
  EXPECT_EQ(newest.runs, 4);
  EXPECT_EQ(newest.open_runs, 0);
  EXPECT_EQ(newest.first_start, Utc(4, 22, 0));
  EXPECT_EQ(newest.last_end, Utc(4, 22, 0, 90));  // train: 20 s + 70 s
  EXPECT_EQ(newest.verdict, VerdictKind::kDegraded);
  EXPECT_EQ(page->runs[1].verdict, VerdictKind::kClean);
  EXPECT_EQ(page->runs[5].pipeline_run, "2026-11-30");
  EXPECT_EQ(page->runs[5].verdict, VerdictKind::kDegraded);
  // Two pipelines with a run on the same day: by pipeline name after the start.
  EXPECT_THAT(Listed({}), ElementsAre("nightly/2026-12-04", "nightly/2026-12-03",
                                      "weekly/2026-12-02", "nightly/2026-12-02",
                                      "nightly/2026-12-01", "nightly/2026-11-30"));

  // Pages: each after the last of the one before, together the whole list.
  std::vector<std::string> paged;
  PipelineRunFilter filter{.limit = 2};
  for (int pages = 0; pages < 5; ++pages) {
    absl::StatusOr<PipelineRunPage> p = ledger_->ListPipelineRuns(filter);
    ASSERT_TRUE(p.ok()) << p.status();
    for (const PipelineRunSummary& s : p->runs) paged.push_back(s.pipeline + "/" + s.pipeline_run);
    if (!p->more) break;
    filter.after = {{p->runs.back().pipeline, p->runs.back().pipeline_run}};
  }
  EXPECT_EQ(paged, Listed({}));
  EXPECT_THAT(Listed({.pipeline = "weekly"}), ElementsAre("weekly/2026-12-02"));
  EXPECT_THAT(Listed({.pipeline = "nightly", .started_before = Utc(2, 22, 0)}),
              ElementsAre("nightly/2026-12-01", "nightly/2026-11-30"));
  EXPECT_TRUE(absl::IsNotFound(
      ledger_->ListPipelineRuns({.after = {{"nightly", "2026-01-01"}}}).status()));
}

TEST_F(PipelineRunsTest, APipelineRunIsRunningWhileARunIsOpenAndJudgedAsTheReaderJudges) {
  RecordNight({.day = 0, .validate = 40, .validate_queued = 10});
  RecordNight({.day = 1, .validate_open = true});
  absl::StatusOr<PipelineRunPage> page = ledger_->ListPipelineRuns({});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->runs.size(), 2u);
  EXPECT_EQ(page->runs[0].verdict, VerdictKind::kRunning);
  EXPECT_EQ(page->runs[0].open_runs, 1);
  EXPECT_EQ(page->runs[0].last_end, Utc(1, 22, 0, 60));  // train's, the last that ended
  EXPECT_EQ(page->runs[1].verdict, VerdictKind::kDegraded);

  // A reader that counts 10 s of 40 as bearable judges the night clean.
  RunsConfig lenient;
  lenient.degraded_fraction = 0.5;
  absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(path_, lenient);
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<PipelineRunPage> judged = (*reader)->ListPipelineRuns({});
  ASSERT_TRUE(judged.ok()) << judged.status();
  EXPECT_EQ(judged->runs[1].verdict, VerdictKind::kClean);
}

TEST_F(PipelineRunsTest, APipelineRunsRunsInTheOrderTheyStartedAndThePipelinesOfAnId) {
  RecordNights();
  RecordNight({.pipeline = "weekly", .day = 2});
  absl::StatusOr<std::vector<RunRecord>> runs = ledger_->PipelineRunRuns("nightly", "2026-12-02");
  ASSERT_TRUE(runs.ok());
  std::vector<std::string> stages;
  for (const RunRecord& r : *runs) stages.push_back(r.start.stage);
  EXPECT_THAT(stages, ElementsAre("ingest", "features", "train", "validate"));
  EXPECT_TRUE(ledger_->PipelineRunRuns("nightly", "2027-01-01")->empty());
  EXPECT_TRUE(ledger_->PipelineRunRuns("nightly", "")->empty());
  EXPECT_THAT(*ledger_->PipelinesWithRun("2026-12-02"), ElementsAre("nightly", "weekly"));
  EXPECT_THAT(*ledger_->PipelinesWithRun("2026-12-03"), ElementsAre("nightly"));
  EXPECT_TRUE(ledger_->PipelinesWithRun("2027-01-01")->empty());

  EXPECT_EQ(*PipelineOfRun(*ledger_, "", "2026-12-03"), "nightly");
  EXPECT_EQ(*PipelineOfRun(*ledger_, "weekly", "2026-12-02"), "weekly");
  const absl::Status shared = PipelineOfRun(*ledger_, "", "2026-12-02").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(shared));
  EXPECT_THAT(shared.message(), HasSubstr("pipelines nightly, weekly each have a pipeline run "
                                          "\"2026-12-02\"; name one with --pipeline"));
  const absl::Status missing = PipelineOfRun(*ledger_, "", "2027-01-01").status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_THAT(missing.message(), HasSubstr("no pipeline run \"2027-01-01\""));
  EXPECT_THAT(PipelineOfRun(*ledger_, "weekly", "2026-12-03").status().message(),
              HasSubstr("it is a run of nightly"));
}

TEST_F(PipelineRunsTest, PressureSpansAreWherePointsShowPressureAboveTheShare) {
  Record(WatchedRun("r", "train", Utc(1, 0, 0), 10));
  std::vector<RunSample> points;
  const double cpu[] = {0.5, 0.05, 0.3, 0.0, 0.0};
  const double memory[] = {0.0, 0.0, 0.2, 0.15, 0.01};
  for (int i = 0; i < 5; ++i) {
    points.push_back({.at = Utc(1, 0, 0, 2 * i), .memory_pressure = memory[i],
                      .cpu_pressure = cpu[i]});
  }
  points.push_back({.at = Utc(1, 0, 0, 10)});  // nothing read
  ASSERT_TRUE(ledger_->AddSamples("r", points).ok());
  absl::StatusOr<std::vector<PressureSpan>> spans = ledger_->PressureSpans("r", 0.1);
  ASSERT_TRUE(spans.ok()) << spans.status();
  // The first point covers no time; the third covers 2-4 s, the fourth 4-6 s.
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_EQ((*spans)[0].from, Utc(1, 0, 0, 2));
  EXPECT_EQ((*spans)[0].to, Utc(1, 0, 0, 4));
  EXPECT_TRUE((*spans)[0].cpu);
  EXPECT_TRUE((*spans)[0].memory);
  EXPECT_EQ((*spans)[1].from, Utc(1, 0, 0, 4));
  EXPECT_FALSE((*spans)[1].cpu);
  EXPECT_TRUE((*spans)[1].memory);
  EXPECT_TRUE(ledger_->PressureSpans("nope", 0.1)->empty());
}

TEST_F(PipelineRunsTest, AReportComparesTheNightWithItsCleanNightsAndNamesWhatMadeItLonger) {
  RecordNights();
  absl::StatusOr<std::optional<PipelineRunReport>> report = Report("2026-12-04");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(*report);
  const PipelineRunReport& r = **report;
  EXPECT_EQ(r.verdict, VerdictKind::kDegraded);
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_EQ(r.first_start, Utc(4, 22, 0));
  EXPECT_EQ(r.last_end, Utc(4, 22, 0, 90));
  EXPECT_EQ(r.WallSeconds(), 90);
  // The degraded night of Nov 30 is no baseline; Dec 1-3 took 60 s each.
  EXPECT_THAT(r.baseline.nights, ElementsAre("2026-12-03", "2026-12-02", "2026-12-01"));
  EXPECT_EQ(r.baseline.median_wall_seconds, 60);
  EXPECT_EQ(r.WallText(), "1.50× its usual 1m00s (median of 3 clean nights)");
  // train ended last, after features, after ingest; validate ended before train.
  std::vector<std::string> path;
  for (const PipelineRunMember& m : r.runs) {
    if (m.on_critical_path) path.push_back(m.run.start.stage);
  }
  EXPECT_THAT(path, ElementsAre("ingest", "features", "train"));
  ASSERT_EQ(r.made_longer.size(), 1u);
  const LongerRun& l = r.made_longer[0];
  EXPECT_EQ(l.stage, "train");
  EXPECT_NEAR(l.excess_seconds, 30, 1e-6);
  EXPECT_NEAR(l.ratio, 70.0 / 40, 1e-6);
  EXPECT_EQ(l.largest_cause, SlowdownCause::kCpuWait);
  EXPECT_GT(l.largest_cause_seconds, 20);
  EXPECT_FALSE(r.deadline);

  const std::string text = PipelineRunText(r);
  EXPECT_THAT(text, HasSubstr("pipeline run 2026-12-04 of nightly: degraded\n"));
  EXPECT_THAT(text, HasSubstr("wall     1m30s: 1.50× its usual 1m00s (median of 3 clean "
                              "nights)"));
  EXPECT_THAT(text, HasSubstr("train (nightly-train-2026-12-04)  +30.0 s (1.75× its usual); "
                              "largest cause: waiting for CPU"));
  EXPECT_THAT(text, Not(HasSubstr("validate (nightly-validate")));

  const nlohmann::json j = PipelineRunReportJson(r, RunsConfig{});
  EXPECT_EQ(j["verdict"], "degraded");
  EXPECT_EQ(j["wall_seconds"], 90.0);
  EXPECT_EQ(j["baseline"]["median_wall_seconds"], 60.0);
  EXPECT_EQ(j["baseline"]["ratio"], 1.5);
  EXPECT_EQ(j["made_longer"][0]["stage"], "train");
  EXPECT_EQ(j["made_longer"][0]["largest_cause"], "cpu_wait");
  ASSERT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["runs"][3]["id"], "nightly-validate-2026-12-04");
  EXPECT_EQ(j["runs"][3]["on_critical_path"], false);
  EXPECT_NEAR(j["runs"][3]["baseline"]["slowdown"]["excess_seconds"].get<double>(), 30, 1e-6);
}

TEST_F(PipelineRunsTest, ANightWithFewerThanThreeCleanNightsBeforeItHasNoBaseline) {
  RecordNight({.day = 1});
  RecordNight({.day = 2});
  absl::StatusOr<std::optional<PipelineRunReport>> report = Report("2026-12-02");
  ASSERT_TRUE(report.ok() && *report);
  EXPECT_FALSE((*report)->baseline.median_wall_seconds);
  EXPECT_EQ((*report)->WallText(), "no baseline yet: 1 clean night of nightly before it, 3 "
                                   "needed");
  EXPECT_TRUE((*report)->made_longer.empty());  // the runs have no baselines either
  EXPECT_THAT(PipelineRunText(**report), HasSubstr("made the night longer:\n  not known yet: no "
                                                   "run on its critical path has a baseline"));
  EXPECT_EQ(PipelineRunReportJson(**report, RunsConfig{})["baseline"]["median_wall_seconds"],
            nullptr);
  absl::StatusOr<std::optional<PipelineRunReport>> none = Report("2027-01-01");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

TEST_F(PipelineRunsTest, TheDeadlineIsMetMissedOrAhead) {
  RecordNight({.day = 1});  // 22:00:00 to 22:01:00 UTC
  PipelineConfig late{.deadline = absl::Hours(6)};
  absl::StatusOr<std::optional<PipelineRunReport>> met = Report("2026-12-01", &late);
  ASSERT_TRUE(met.ok() && *met);
  ASSERT_TRUE((*met)->deadline);
  EXPECT_EQ((*met)->deadline->at, Utc(2, 6, 0));
  EXPECT_EQ((*met)->deadline->met, true);
  EXPECT_THAT(PipelineRunText(**met), HasSubstr("deadline  06:00 local "
                                                 "(2026-12-02T06:00:00.000Z): met, 7h59m to "
                                                 "spare"));

  PipelineConfig tight{.deadline = absl::Hours(22) + absl::Seconds(30)};
  absl::StatusOr<std::optional<PipelineRunReport>> missed = Report("2026-12-01", &tight);
  ASSERT_TRUE(missed.ok() && *missed);
  EXPECT_EQ((*missed)->deadline->met, false);
  EXPECT_THAT(PipelineRunText(**missed), HasSubstr("missed by 30.0 s"));

  RecordNight({.day = 2, .validate_open = true});
  absl::StatusOr<std::optional<PipelineRunReport>> ahead =
      Report("2026-12-02", &late, Utc(2, 23, 0));
  ASSERT_TRUE(ahead.ok() && *ahead);
  EXPECT_EQ((*ahead)->verdict, VerdictKind::kRunning);
  EXPECT_FALSE((*ahead)->last_end);
  EXPECT_FALSE((*ahead)->deadline->met);
  absl::StatusOr<std::optional<PipelineRunReport>> past =
      Report("2026-12-02", &late, Utc(3, 7, 0));
  EXPECT_EQ((*past)->deadline->met, false);
  EXPECT_EQ(PipelineRunReportJson(**ahead, RunsConfig{})["deadline"]["met"], nullptr);
}

TEST_F(PipelineRunsTest, TheCliListsAndShowsPipelineRuns) {
  RecordNights();
  RecordNight({.pipeline = "weekly", .day = 2});
  ledger_.reset();
  auto cli = [](std::vector<std::string> args) {
    return testing::RunCliOf<PipelinesCli>(std::move(args), Config{});
  };
  testing::CliOutput list = cli({"pipelines", "list", "--ledger.path", path_});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("PIPELINE  PIPELINE RUN  STARTED"));
  EXPECT_THAT(list.out, HasSubstr("nightly   2026-12-04    2026-12-04T22:00:00.000Z  1m30s  4     "
                                  "degraded"));
  testing::CliOutput json = cli(
      {"pipelines", "list", "--pipeline", "weekly", "--json", "--ledger.path", path_});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["pipeline_run"], "2026-12-02");
  EXPECT_EQ(j[0]["verdict"], "clean");
  EXPECT_EQ(j[0]["wall_seconds"], 60.0);
  testing::CliOutput limited =
      cli({"pipelines", "list", "--limit", "2", "--ledger.path", path_});
  EXPECT_THAT(limited.err, HasSubstr("more pipeline runs than the 2 shown"));

  testing::CliOutput show =
      cli({"pipelines", "show", "2026-12-04", "--ledger.path", path_});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("pipeline run 2026-12-04 of nightly: degraded"));
  testing::CliOutput show_json = cli(
      {"pipelines", "show", "2026-12-02", "--pipeline", "weekly", "--json", "--ledger.path",
       path_});
  ASSERT_EQ(show_json.code, 0) << show_json.err;
  EXPECT_EQ(nlohmann::json::parse(show_json.out)["pipeline"], "weekly");

  // Bad input: a clear message and exit 1.
  testing::CliOutput shared =
      cli({"pipelines", "show", "2026-12-02", "--ledger.path", path_});
  EXPECT_EQ(shared.code, 1);
  EXPECT_THAT(shared.err, HasSubstr("name one with --pipeline"));
  testing::CliOutput missing =
      cli({"pipelines", "show", "2027-01-01", "--ledger.path", path_});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("stagewatch pipelines show: no pipeline run "
                                     "\"2027-01-01\""));
  testing::CliOutput bad_id =
      cli({"pipelines", "show", "../etc", "--ledger.path", path_});
  EXPECT_EQ(bad_id.code, 1);
  EXPECT_THAT(bad_id.err, HasSubstr("pipeline run \"../etc\" is not valid"));
  testing::CliOutput bad_name = cli(
      {"pipelines", "list", "--pipeline", "no way", "--ledger.path", path_});
  EXPECT_EQ(bad_name.code, 1);
  EXPECT_THAT(bad_name.err, HasSubstr("pipeline name \"no way\" is not valid"));
  testing::CliOutput no_ledger = cli(
      {"pipelines", "list", "--ledger.path", dir_.file("none.db")});
  EXPECT_EQ(no_ledger.code, 1);
  EXPECT_THAT(no_ledger.err, HasSubstr("no ledger at"));
}

}  // namespace
}  // namespace stagewatch
