// The run pages and their JSON, read from a real SQLite ledger: escaping, filters, errors, charts.
#include "exporters/pages/runs_pages.h"

#include <regex>

#include "absl/strings/str_format.h"

#include "exporters/pages/run_charts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs_test_util.h"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using stagewatch::testing::At;
using stagewatch::testing::Started;
using stagewatch::testing::TempDir;

constexpr char kHostile[] = "<script>alert('x')</script>&\"";

class RunsPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ledger = *Ledger::Open(dir_.file("ledger.db"));
    RunStart oom = Started("oom-1", "train", At(0));
    oom.command = {"python3", "-c", kHostile};
    oom.limits.memory_max_bytes = 200 << 20;
    ASSERT_TRUE(ledger->BeginRun(oom).ok());
    std::vector<RunSample> points;
    for (int i = 1; i <= 20; ++i) {
      points.push_back({At(i), uint64_t(i) * (10 << 20), 200 << 20, 0.9, 0.01 * i, 0.0});
    }
    ASSERT_TRUE(ledger->AddSamples("oom-1", points).ok());
    RunEnd killed;
    killed.end = At(21);
    killed.signal = 9;
    killed.facts.oom_kills_kernel = 1;
    killed.facts.memory_peak_bytes = 200 << 20;
    killed.facts.memory_limit_bytes = 200 << 20;
    ASSERT_TRUE(ledger->EndRun("oom-1", killed).ok());

    ASSERT_TRUE(ledger->BeginRun(Started("ok-1", "validate", At(100))).ok());
    RunEnd fine;
    fine.end = At(110);
    fine.exit_code = 0;
    fine.facts.oom_kills_kernel = 0;
    fine.facts.cpu_seconds = 1;
    fine.facts.cpu_throttled_seconds = 0;
    fine.facts.memory_pressure_seconds = 0;
    fine.facts.cpu_pressure_seconds = 0;
    ASSERT_TRUE(ledger->EndRun("ok-1", fine).ok());
    AgentFacts watched;  // an agent saw it all, and nothing went wrong: clean
    watched.oom_kills_userspace = 0;
    watched.reclaim_stall_seconds = 0;
    watched.run_queue_wait_seconds = 0;
    watched.preemptors_observed = watched.anomalies_observed = true;
    ASSERT_TRUE(ledger->AddAgentFacts("ok-1", watched).ok());
  }

  HttpReply Get(const std::string& path, std::map<std::string, std::string> query = {}) {
    return AnswerRunsRequest(source_, config_, {path, std::move(query)});
  }

  TempDir dir_;
  LedgerRunsSource source_{dir_.file("ledger.db"), RunsConfig{}};
  RunsConfig config_;
};

TEST_F(RunsPagesTest, RunPageShowsTheVerdictFirstAndEscapesTheCommand) {
  HttpReply r = Get("/runs/oom-1");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(r.body, Not(HasSubstr("<script>")));
  EXPECT_THAT(r.body, HasSubstr("&lt;script&gt;alert("));
  EXPECT_THAT(r.body, HasSubstr("&lt;/script&gt;&amp;&quot;"));
  const size_t verdict = r.body.find("id=\"verdict\"");
  const size_t chart = r.body.find("<svg");
  ASSERT_NE(verdict, std::string::npos);
  ASSERT_NE(chart, std::string::npos);
  EXPECT_LT(verdict, chart);
  EXPECT_THAT(r.body.substr(verdict, 80), HasSubstr("interrupted"));
  EXPECT_THAT(r.body, HasSubstr("OOM kill"));
  // Three charts; every sampled line carries all 20 points, the kernel's peak spans the run.
  std::regex polyline("<polyline[^>]* points=\"([^\"]*)\"><title>([^<]*)<");
  int lines = 0;
  for (auto it = std::sregex_iterator(r.body.begin(), r.body.end(), polyline);
       it != std::sregex_iterator(); ++it, ++lines) {
    const std::string coords = (*it)[1];
    if ((*it)[2] == "peak (kernel)") {
      // 200 MiB of a 300 MiB top (200 × 1.05 up to a step of 100): y = 28 + 156 / 3 = 80.0.
      EXPECT_EQ(coords, "80.0,80.0 740.0,80.0");
    } else {
      EXPECT_EQ(std::count(coords.begin(), coords.end(), ','), 20) << coords;
    }
  }
  EXPECT_EQ(lines, 6);  // memory, its peak, limit, CPU, memory stalled, CPU stalled
  size_t svgs = 0;
  for (size_t p = r.body.find("<svg"); p != std::string::npos; p = r.body.find("<svg", p + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 3u);
  EXPECT_THAT(r.body, HasSubstr("MiB"));
  EXPECT_THAT(r.body, HasSubstr("cores"));
}

// A running run's page reloads itself, so it follows the run; an ended one's stays.
TEST_F(RunsPagesTest, ARunningRunsPageRefreshesItself) {
  ASSERT_TRUE((*Ledger::Open(dir_.file("ledger.db")))->BeginRun(Started("live-1", "t", At(200))).ok());
  HttpReply running = Get("/runs/live-1");
  ASSERT_EQ(running.status, 200u) << running.body;
  EXPECT_THAT(running.body, HasSubstr("<meta http-equiv=\"refresh\" content=\"5\">"));
  EXPECT_THAT(Get("/runs/oom-1").body, Not(HasSubstr("http-equiv=\"refresh\"")));
}

TEST_F(RunsPagesTest, ApiGivesTheReportJsonWithTheSamples) {
  HttpReply r = Get("/api/v1/runs/oom-1");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["id"], "oom-1");
  EXPECT_EQ(j["verdict"], "interrupted");
  EXPECT_EQ(j["oom_kills"]["kernel"], 1);
  ASSERT_EQ(j["samples"].size(), 20u);
  EXPECT_EQ(j["samples"][19]["memory_bytes"], 200 << 20);
  EXPECT_EQ(j["samples"][0]["cpu_pressure"], 0.0);

  nlohmann::json list = nlohmann::json::parse(Get("/api/v1/runs").body);
  ASSERT_EQ(list["runs"].size(), 2u);
  EXPECT_EQ(list["runs"][0]["id"], "ok-1");  // newest first
}

TEST_F(RunsPagesTest, ListFiltersByStageAndVerdict) {
  nlohmann::json by_stage =
      nlohmann::json::parse(Get("/api/v1/runs", {{"stage", "train"}}).body);
  ASSERT_EQ(by_stage["runs"].size(), 1u);
  EXPECT_EQ(by_stage["runs"][0]["id"], "oom-1");
  nlohmann::json by_verdict =
      nlohmann::json::parse(Get("/api/v1/runs", {{"verdict", "clean"}}).body);
  ASSERT_EQ(by_verdict["runs"].size(), 1u) << by_verdict.dump();
  EXPECT_EQ(by_verdict["runs"][0]["id"], "ok-1");
  HttpReply html = Get("/runs", {{"verdict", "interrupted"}});
  ASSERT_EQ(html.status, 200u);
  EXPECT_THAT(html.body, HasSubstr("href=\"/runs/oom-1\""));
  EXPECT_THAT(html.body, Not(HasSubstr("/runs/ok-")));
  EXPECT_THAT(html.body, Not(HasSubstr("/runs/slow-")));
  EXPECT_THAT(Get("/runs", {{"limit", "1"}}).body, Not(HasSubstr("oom-1")));
}

TEST_F(RunsPagesTest, BadParametersAre400WithWhatIsAllowed) {
  HttpReply verdict = Get("/runs", {{"verdict", "<b>great</b>"}});
  EXPECT_EQ(verdict.status, 400u);
  EXPECT_THAT(verdict.body, HasSubstr("clean"));
  EXPECT_THAT(verdict.body, HasSubstr("&lt;b&gt;great"));
  EXPECT_THAT(verdict.body, Not(HasSubstr("<b>great")));
  EXPECT_EQ(Get("/api/v1/runs", {{"stage", "a b"}}).status, 400u);
  EXPECT_EQ(Get("/api/v1/runs", {{"limit", "0"}}).status, 400u);
  EXPECT_EQ(Get("/api/v1/runs", {{"limit", "x"}}).status, 400u);
  HttpReply unknown = Get("/api/v1/runs", {{"colour", "red"}});
  EXPECT_EQ(unknown.status, 400u);
  EXPECT_THAT(nlohmann::json::parse(unknown.body)["error"].get<std::string>(),
              HasSubstr("colour"));
  EXPECT_EQ(Get("/runs/oom-1", {{"x", "1"}}).status, 400u);
  EXPECT_EQ(Get("/runs/a<b").status, 400u);
}

TEST_F(RunsPagesTest, UnknownRunIs404) {
  HttpReply html = Get("/runs/nope-1");
  EXPECT_EQ(html.status, 404u);
  EXPECT_THAT(html.body, HasSubstr("no run"));
  EXPECT_EQ(Get("/api/v1/runs/nope-1").status, 404u);
}

// 150 runs, newest first: 90 clean, 30 throttled 2% of their wall time, 30 OOM-killed, so that
// the newest 100 hold no OOM kill and only 10 of the throttled runs. A verdict filter looks at
// every run, whether the ledger stored the verdict (interrupted) or the page judges it with
// thresholds of its own (degraded at 1%).
TEST(RunsPagesManyRunsTest, AVerdictFilterFindsRunsOlderThanTheNewestHundred) {
  TempDir dir;
  {
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    ASSERT_TRUE(ledger->BeginBatch().ok());
    for (int i = 0; i < 150; ++i) {  // i = 0 is the oldest
      const char* kind = i < 30 ? "oom" : i < 60 ? "slow" : "ok";
      const std::string id = absl::StrFormat("%s-%03d", kind, i);
      ASSERT_TRUE(ledger->BeginRun(Started(id, "train", At(100 * i))).ok());
      AgentFacts watched;
      watched.oom_kills_userspace = 0;
      watched.reclaim_stall_seconds = 0;
      watched.run_queue_wait_seconds = 0;
      watched.preemptors_observed = watched.anomalies_observed = true;
      ASSERT_TRUE(ledger->AddAgentFacts(id, watched).ok());
      RunEnd end;
      end.end = At(100 * i + 50);
      end.facts.oom_kills_kernel = i < 30 ? 1 : 0;
      end.facts.cpu_seconds = 1;
      end.facts.cpu_throttled_seconds = i >= 30 && i < 60 ? 1 : 0;  // 2% of 50 s
      end.facts.memory_pressure_seconds = 0;
      end.facts.cpu_pressure_seconds = 0;
      if (i < 30) {
        end.signal = 9;
      } else {
        end.exit_code = 0;
      }
      ASSERT_TRUE(ledger->EndRun(id, end).ok());
    }
    ASSERT_TRUE(ledger->CommitBatch().ok());
  }
  auto ids = [](const nlohmann::json& page) {
    std::vector<std::string> out;
    for (const auto& run : page["runs"]) out.push_back(run["id"]);
    return out;
  };
  auto expected = [](const char* prefix, int from) {
    std::vector<std::string> out;
    for (int i = from + 29; i >= from; --i) out.push_back(absl::StrFormat("%s-%03d", prefix, i));
    return out;
  };

  LedgerRunsSource stored(dir.file("ledger.db"), RunsConfig{});
  nlohmann::json interrupted = nlohmann::json::parse(
      AnswerRunsRequest(stored, RunsConfig{}, {"/api/v1/runs", {{"verdict", "interrupted"}}}).body);
  EXPECT_EQ(ids(interrupted), expected("oom", 0));
  const HttpReply html =
      AnswerRunsRequest(stored, RunsConfig{}, {"/runs", {{"verdict", "interrupted"}}});
  ASSERT_EQ(html.status, 200u);
  for (const std::string& id : expected("oom", 0)) {
    EXPECT_THAT(html.body, HasSubstr("href=\"/runs/" + id + "\"")) << id;
  }
  EXPECT_THAT(html.body, Not(HasSubstr("/runs/ok-")));
  EXPECT_THAT(html.body, Not(HasSubstr("/runs/slow-")));

  RunsConfig strict;
  strict.degraded_fraction = 0.01;
  LedgerRunsSource judged(dir.file("ledger.db"), strict);
  nlohmann::json degraded = nlohmann::json::parse(
      AnswerRunsRequest(judged, strict, {"/api/v1/runs", {{"verdict", "degraded"}}}).body);
  EXPECT_EQ(ids(degraded), expected("slow", 30));
}

TEST(RunsPagesNoLedgerTest, AMissingLedgerIs503SayingWhy) {
  TempDir dir;
  LedgerRunsSource source(dir.file("absent.db"), RunsConfig{});
  HttpReply r = AnswerRunsRequest(source, RunsConfig{}, {"/runs", {}});
  EXPECT_EQ(r.status, 503u);
  EXPECT_THAT(r.body, HasSubstr("absent.db"));
  // Once a run creates it, the next request reads it.
  auto ledger = *Ledger::Open(dir.file("absent.db"));
  ASSERT_TRUE(ledger->BeginRun(Started("later-1", "train", At(0))).ok());
  r = AnswerRunsRequest(source, RunsConfig{}, {"/api/v1/runs", {}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_THAT(r.body, HasSubstr("later-1"));
}

// A cgroup's name, and so a discovered run's stage or path, may hold bytes that are not UTF-8;
// the JSON has U+FFFD there (a strict dump would throw in the agent's request handler).
TEST(RunsPagesBytesTest, BytesThatAreNotUtf8AreReplacedInTheJson) {
  TempDir dir;
  RunStart start = Started("bytes-1", "train", At(0));
  start.cgroup_path = "/stagewatch/train/job\xff\x9b";
  ASSERT_TRUE((*Ledger::Open(dir.file("ledger.db")))->BeginRun(start).ok());
  LedgerRunsSource source(dir.file("ledger.db"), RunsConfig{});
  for (const char* path : {"/api/v1/runs", "/api/v1/runs/bytes-1"}) {
    HttpReply r = AnswerRunsRequest(source, RunsConfig{}, {path, {}});
    ASSERT_EQ(r.status, 200u) << path;
    EXPECT_THAT(r.body, HasSubstr("job\xef\xbf\xbd\xef\xbf\xbd")) << path;
  }
}

TEST(RunChartsTest, ScalesPointsIntoThePlotAndLabelsTheAxes) {
  Chart c{"Memory", [](double v) { return std::to_string(int(v)) + " B"; }, 1, 10,
          {{"used", "#00f", false, {{0, 0}, {10, 100}}}}, {{5, "a<b", "#f00"}}};
  const std::string svg = RenderChartSvg(c);
  // x from 80 to 740, y from 184 (0) to 28 (the top: 100 × 1.05 up to a step of 50, 150).
  EXPECT_THAT(svg, HasSubstr("points=\"80.0,184.0 740.0,80.0\""));
  EXPECT_THAT(svg, HasSubstr(">150 B<"));
  EXPECT_THAT(svg, HasSubstr(">10 s<"));
  EXPECT_THAT(svg, HasSubstr("a&lt;b"));
  // A long series is drawn with at most two points per pixel column, its peak kept.
  Chart dense{"Memory", [](double v) { return std::to_string(int(v)); }, 1, 100,
              {{"m", "#00f"}}, {}};
  for (int i = 0; i < 4096; ++i) {
    dense.lines[0].points.push_back({i * 100.0 / 4096, i == 2000 ? 50 : 1});
  }
  const std::string drawn = RenderChartSvg(dense);
  const size_t from = drawn.find("points=\"") + 8;
  const std::string coords = drawn.substr(from, drawn.find('"', from) - from);
  EXPECT_LE(std::count(coords.begin(), coords.end(), ','), 2 * 660);
  EXPECT_GE(std::count(coords.begin(), coords.end(), ','), 660);
  // The peak of 50 is kept: top 60 (50 × 1.05 up to a step of 20), y = 28 + 156 × 1/6 = 54.0.
  EXPECT_THAT(coords, HasSubstr(",54.0"));
  Chart empty{"CPU", [](double v) { return std::to_string(v); }, 1, 10, {{"cpu", "#00f"}}, {}};
  EXPECT_THAT(RenderChartSvg(empty), HasSubstr("not sampled"));
  EXPECT_THAT(RenderChartSvg(empty), Not(HasSubstr("<polyline")));
}

}  // namespace
}  // namespace stagewatch::exporters
