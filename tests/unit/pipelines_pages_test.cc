// The pipeline pages and their JSON, read from a real SQLite ledger: the timeline's bars on a
// shared time axis with their links and marks, escaping, parameters, and errors.
#include "exporters/pages/pipelines_pages.h"

#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/pipelines_source.h"
#include "runs_test_util.h"
#include "units.h"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using stagewatch::testing::At;
using stagewatch::testing::TempDir;
using stagewatch::testing::WatchedRun;

constexpr char kHostile[] = "<script>alert('x')</script>&\"";

// The attributes of each element of `tag` whose class starts with `cls`, in order.
std::vector<std::map<std::string, std::string>> Elements(const std::string& html,
                                                         const std::string& tag,
                                                         const std::string& cls) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex element("<" + tag + "( [^>]*class=\"" + cls + "[^\"]*\"[^>]*)>");
  const std::regex attribute("([a-z-]+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(html.begin(), html.end(), element), end; it != end; ++it) {
    const std::string attrs = (*it)[1];
    std::map<std::string, std::string>& e = out.emplace_back();
    for (std::sregex_iterator a(attrs.begin(), attrs.end(), attribute); a != end; ++a) {
      e[(*a)[1]] = (*a)[2];
    }
  }
  return out;
}

class PipelinesPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ledger = *Ledger::Open(dir_.file("ledger.db"));
    auto record = [&](RunRecord r, const std::string& pipeline, const std::string& night) {
      r.start.pipeline = pipeline;
      r.start.pipeline_run = night;
      ASSERT_TRUE(ledger->BeginRun(r.start).ok());
      if (r.end) ASSERT_TRUE(ledger->EndRun(r.start.id, *r.end).ok());
      ASSERT_TRUE(ledger->AddAgentFacts(r.start.id, r.agent).ok());
    };
    // ingest 0-10 s, then train 10-40 s beside validate 10-30 s (killed, with an anomaly).
    record(WatchedRun("ingest-1", "ingest", At(0), 10), "nightly", "2026-12-03");
    record(WatchedRun("train-1", "train", At(10), 30), "nightly", "2026-12-03");
    RunRecord validate = WatchedRun("validate-1", "validate", At(10), 20);
    validate.end->facts.oom_kills_kernel = 1;
    validate.end->signal = 9;
    validate.agent.anomalies = {{"memory_climb", At(25), kHostile}};
    record(validate, "nightly", "2026-12-03");
    record(WatchedRun("other-1", "train", At(100), 5), "weekly", "2026-12-03");
    record(WatchedRun("later-1", "train", At(200), 5), "nightly", "2026-12-04");
    // train waited for a CPU from 14 s to 16 s.
    std::vector<RunSample> points;
    for (int i = 0; i <= 6; ++i) {
      points.push_back({.at = At(10 + 2 * i), .memory_pressure = 0.0,
                        .cpu_pressure = i == 3 ? 0.6 : 0.0});
    }
    ASSERT_TRUE(ledger->AddSamples("train-1", points).ok());
  }

  HttpReply Get(const std::string& path, std::map<std::string, std::string> query = {}) {
    return AnswerPipelinesRequest(pipelines_, RunsConfig{}, {path, std::move(query)});
  }

  TempDir dir_;
  LedgerRunsSource runs_{dir_.file("ledger.db"), RunsConfig{}};
  LedgerPipelinesSource pipelines_{&runs_, RunsConfig{}, PipelinesConfig{}, absl::UTCTimeZone()};
};

TEST_F(PipelinesPagesTest, TheTimelineHasABarPerRunOnOneTimeAxisEachLinkingToItsRun) {
  const HttpReply page = Get("/pipelines/2026-12-03", {{"pipeline", "nightly"}});
  ASSERT_EQ(page.status, 200u) << page.body;
  const auto svg = Elements(page.body, "svg", "timeline");
  ASSERT_EQ(svg.size(), 1u);
  const double left = std::stod(svg[0].at("data-plot-left"));
  const double width = std::stod(svg[0].at("data-plot-width"));
  EXPECT_EQ(svg[0].at("data-from"), FormatRfc3339(At(0)));
  EXPECT_EQ(svg[0].at("data-to"), FormatRfc3339(At(40)));
  const auto bars = Elements(page.body, "rect", "bar");
  ASSERT_EQ(bars.size(), 3u);
  // Seconds from the first start and to the last end (40 s) of each run.
  const std::map<std::string, std::pair<double, double>> expected = {
      {"ingest-1", {0, 10}}, {"train-1", {10, 40}}, {"validate-1", {10, 30}}};
  for (const auto& bar : bars) {
    const auto& [from, to] = expected.at(bar.at("data-run"));
    EXPECT_NEAR(std::stod(bar.at("x")), left + width * from / 40, 0.01) << bar.at("data-run");
    EXPECT_NEAR(std::stod(bar.at("width")), width * (to - from) / 40, 0.01);
    EXPECT_EQ(bar.at("data-start"), FormatRfc3339(At(from)));
    EXPECT_EQ(bar.at("data-end"), FormatRfc3339(At(to)));
    EXPECT_THAT(page.body, HasSubstr("<a href=\"/runs/" + bar.at("data-run") + "\"><rect"));
  }
  EXPECT_THAT(bars[2].at("class"), HasSubstr("interrupted"));
  EXPECT_EQ(bars[2].at("fill"), "#cf222e");
  EXPECT_EQ(bars[0].at("fill"), "#2da44e");  // clean
  // train's wait for a CPU, 14 s to 16 s, over its bar.
  const auto waits = Elements(page.body, "rect", "cpu-wait");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_NEAR(std::stod(waits[0].at("x")), left + width * 14 / 40, 0.01);
  EXPECT_NEAR(std::stod(waits[0].at("width")), width * 2 / 40, 0.01);
  // validate's kill at its end, and its anomaly at 25 s, escaped.
  EXPECT_THAT(page.body, HasSubstr("<title>OOM kill ×1 (by its end)</title>"));
  EXPECT_EQ(Elements(page.body, "path", "anomaly").size(), 1u);
  EXPECT_THAT(page.body, Not(HasSubstr("<script>")));
  EXPECT_THAT(page.body, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)"));
  EXPECT_THAT(page.body, HasSubstr("<p class=\"verdict\" id=\"verdict\"><span "
                                   "class=\"interrupted\">interrupted</span></p>"));
  EXPECT_THAT(page.body, HasSubstr("no baseline yet: 0 clean nights of nightly before it"));
}

TEST_F(PipelinesPagesTest, TheListAndTheJson) {
  const HttpReply list = Get("/pipelines");
  ASSERT_EQ(list.status, 200u);
  EXPECT_THAT(list.body, HasSubstr("<a href=\"/pipelines/2026-12-04?pipeline=nightly\">"));
  EXPECT_THAT(list.body, HasSubstr("<a href=\"/pipelines/2026-12-03?pipeline=weekly\">"));

  const HttpReply api = Get("/api/v1/pipelines", {{"limit", "2"}});
  ASSERT_EQ(api.status, 200u);
  nlohmann::json j = nlohmann::json::parse(api.body);
  ASSERT_EQ(j["pipeline_runs"].size(), 2u);
  EXPECT_EQ(j["pipeline_runs"][0]["pipeline_run"], "2026-12-04");
  EXPECT_EQ(j["next_before"], "weekly/2026-12-03");
  nlohmann::json next = nlohmann::json::parse(
      Get("/api/v1/pipelines", {{"limit", "2"}, {"before", "weekly/2026-12-03"}}).body);
  ASSERT_EQ(next["pipeline_runs"].size(), 1u);
  EXPECT_EQ(next["pipeline_runs"][0]["pipeline"], "nightly");
  EXPECT_EQ(next["pipeline_runs"][0]["verdict"], "interrupted");
  EXPECT_EQ(next["next_before"], nullptr);

  const HttpReply one = Get("/api/v1/pipelines/2026-12-04");
  ASSERT_EQ(one.status, 200u) << one.body;
  nlohmann::json r = nlohmann::json::parse(one.body);
  EXPECT_EQ(r["pipeline"], "nightly");
  EXPECT_EQ(r["runs"][0]["id"], "later-1");
  const HttpReply night = Get("/api/v1/pipelines/2026-12-03", {{"pipeline", "nightly"}});
  nlohmann::json n = nlohmann::json::parse(night.body);
  EXPECT_EQ(n["pressure_spans"]["train-1"][0]["from"], FormatRfc3339(At(14)));
  EXPECT_EQ(n["pressure_spans"]["train-1"][0]["cpu_wait"], true);
}

TEST_F(PipelinesPagesTest, BadInputIsRefusedWithWhatToDo) {
  const HttpReply shared = Get("/pipelines/2026-12-03");
  EXPECT_EQ(shared.status, 400u);
  EXPECT_THAT(shared.body, HasSubstr("pipelines nightly, weekly each have a pipeline run "
                                     "&quot;2026-12-03&quot;"));
  EXPECT_THAT(shared.body, HasSubstr("?pipeline=NAME"));
  EXPECT_EQ(Get("/api/v1/pipelines/2027-01-01").status, 404u);
  EXPECT_EQ(Get("/pipelines/2026-12-03", {{"pipeline", "monthly"}}).status, 404u);
  EXPECT_EQ(Get("/pipelines/..%2f").status, 400u);
  EXPECT_EQ(Get("/pipelines/2026-12-03", {{"pipeline", "a b"}}).status, 400u);
  EXPECT_EQ(Get("/pipelines/2026-12-03", {{"verdict", "clean"}}).status, 400u);
  EXPECT_EQ(Get("/pipelines", {{"limit", "0"}}).status, 400u);
  EXPECT_EQ(Get("/pipelines", {{"before", "nightly"}}).status, 400u);
  EXPECT_EQ(Get("/pipelines", {{"before", "nightly/2027-01-01"}}).status, 400u);
  EXPECT_EQ(Get("/api/v1/pipelines", {{"stage", "x"}}).status, 400u);

  LedgerRunsSource missing(dir_.file("none/ledger.db"), RunsConfig{});
  LedgerPipelinesSource none(&missing, RunsConfig{}, PipelinesConfig{});
  EXPECT_EQ(AnswerPipelinesRequest(none, RunsConfig{}, {"/pipelines", {}}).status, 503u);
}

}  // namespace
}  // namespace stagewatch::exporters
