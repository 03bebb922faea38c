// Lists over a ledger of 200,000 runs (built once for the suite): a filter finds an interrupted
// run far older than the newest 1,000 through the agent's pages and through `runs list`, and a
// list cut at its limit says so and how to see more.
#include <sqlite3.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "exporters/pages/runs_pages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/runs_source.h"
#include "runs_cli_runner.h"
#include "runs_test_util.h"
#include "units.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::At;

constexpr int kRuns = 200'000;
constexpr int kOldRun = 150'000;  // newest first: 150,000 runs are newer than it
constexpr char kOldId[] = "old-oom";

class RunsAtScaleTest : public ::testing::Test {
 protected:
  // The rows go in raw, in one transaction (about a second), with the verdicts a writer with
  // the default thresholds stores (the tests check them against JudgeRun).
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir;
    path_ = dir_->file("ledger.db");
    ASSERT_TRUE(Ledger::Open(path_).ok());
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    const std::string judged_with = VerdictJudgedWith(RunsConfig{});
    sqlite3_stmt* insert = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(
                  db,
                  "INSERT INTO runs (id, stage, command, source, cgroup_path, start_time, "
                  "end_time, closed_by, exit_code, signal, oom_kills_kernel, cpu_seconds, "
                  "agent_observed, oom_kills_userspace, reclaim_stall_seconds, "
                  "run_queue_wait_seconds, preemptors, anomalies, verdict, verdict_judged_with) "
                  "VALUES (?, 'bulk', '[\"true\"]', 'launcher', '', ?, ?, 'launcher', ?, ?, ?, "
                  "1, 1, 0, 0, 0, '{}', '[]', ?, ?)",
                  -1, &insert, nullptr),
              SQLITE_OK);
    for (int i = 0; i < kRuns; ++i) {  // i = 0 is the oldest
      const bool old_oom = i == kRuns - 1 - kOldRun;
      const std::string id = old_oom ? kOldId : absl::StrFormat("run-%06d", i);
      const std::string start = FormatRfc3339(At(i)), end = FormatRfc3339(At(i) + absl::Seconds(1));
      sqlite3_reset(insert);
      sqlite3_bind_text(insert, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert, 2, start.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert, 3, end.c_str(), -1, SQLITE_TRANSIENT);
      if (old_oom) {
        sqlite3_bind_null(insert, 4);
        sqlite3_bind_int(insert, 5, 9);
      } else {
        sqlite3_bind_int(insert, 4, 0);
        sqlite3_bind_null(insert, 5);
      }
      sqlite3_bind_int(insert, 6, old_oom ? 1 : 0);
      sqlite3_bind_text(insert, 7, old_oom ? "interrupted" : "clean", -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 8, judged_with.c_str(), -1, SQLITE_STATIC);
      ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE) << sqlite3_errmsg(db);
    }
    sqlite3_finalize(insert);
    ASSERT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  static void TearDownTestSuite() { delete dir_; }

  exporters::HttpReply Get(const std::string& path, std::map<std::string, std::string> query) {
    return exporters::AnswerRunsRequest(source_, RunsConfig{}, {path, std::move(query)});
  }

  // `stagewatch runs list ARGS...` on the suite's ledger.
  static testing::CliOutput RunsList(std::vector<std::string> args) {
    args.insert(args.begin(), {"runs", "--ledger.path", path_, "list"});
    return testing::RunCli(args);
  }

  static std::vector<std::string> Lines(const std::string& text) {
    return absl::StrSplit(text, '\n', absl::SkipEmpty());
  }

  static testing::TempDir* dir_;
  static std::string path_;
  LedgerRunsSource source_{path_, RunsConfig{}};
};

testing::TempDir* RunsAtScaleTest::dir_ = nullptr;
std::string RunsAtScaleTest::path_;

TEST_F(RunsAtScaleTest, ThePagesFindAnInterruptedRunOlderThanTheNewestThousand) {
  exporters::HttpReply api = Get("/api/v1/runs", {{"verdict", "interrupted"}});
  ASSERT_EQ(api.status, 200u) << api.body;
  const nlohmann::json j = nlohmann::json::parse(api.body);
  ASSERT_EQ(j["runs"].size(), 1u) << api.body.substr(0, 300);
  EXPECT_EQ(j["runs"][0]["id"], kOldId);
  EXPECT_EQ(j["runs"][0]["verdict"], "interrupted");
  EXPECT_TRUE(j["next_before"].is_null()) << "nothing more matches";

  exporters::HttpReply html = Get("/runs", {{"verdict", "interrupted"}, {"stage", "bulk"}});
  ASSERT_EQ(html.status, 200u);
  EXPECT_THAT(html.body, HasSubstr("href=\"/runs/old-oom\""));
  EXPECT_THAT(html.body, Not(HasSubstr("id=\"more\"")));
}

TEST_F(RunsAtScaleTest, APageCutAtItsLimitGivesTheNextPageWhichFollowsOn) {
  const nlohmann::json first =
      nlohmann::json::parse(Get("/api/v1/runs", {{"limit", "1000"}}).body);
  ASSERT_EQ(first["runs"].size(), 1000u);
  EXPECT_EQ(first["runs"][0]["id"], absl::StrFormat("run-%06d", kRuns - 1));
  ASSERT_EQ(first["next_before"], first["runs"][999]["id"]);
  const nlohmann::json second = nlohmann::json::parse(
      Get("/api/v1/runs", {{"limit", "1000"}, {"before", first["next_before"]}}).body);
  ASSERT_EQ(second["runs"].size(), 1000u);
  EXPECT_EQ(second["runs"][0]["id"], absl::StrFormat("run-%06d", kRuns - 1001));
  for (const nlohmann::json& run : second["runs"]) EXPECT_EQ(run["verdict"], "clean");

  exporters::HttpReply html = Get("/runs", {{"stage", "bulk"}});
  EXPECT_THAT(html.body, HasSubstr("<p id=\"more\">More runs match than these 100: <a href=\""
                                   "/runs?stage=bulk&amp;before=run-199900\">next page</a>"));
  EXPECT_EQ(Get("/api/v1/runs", {{"before", "no-such-run"}}).status, 400u);
}

TEST_F(RunsAtScaleTest, RunsListFindsTheOldRunAndSaysWhenItCutsTheList) {
  testing::CliOutput by_verdict = RunsList({"--verdict", "interrupted"});
  ASSERT_EQ(by_verdict.code, 0) << by_verdict.err;
  ASSERT_EQ(Lines(by_verdict.out).size(), 2u) << by_verdict.out;
  EXPECT_THAT(Lines(by_verdict.out)[1], HasSubstr(kOldId));
  EXPECT_EQ(by_verdict.err, "");

  testing::CliOutput cut = RunsList({"--limit", "3"});
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_EQ(Lines(cut.out).size(), 4u);  // the header and 3 runs
  EXPECT_EQ(cut.err, "stagewatch runs list: more runs match than the 3 shown (the newest); see "
                     "more with --limit N, or all with --all\n");
  testing::CliOutput fallback = RunsList({});
  EXPECT_EQ(Lines(fallback.out).size(), 1001u);
  EXPECT_THAT(fallback.err, HasSubstr("more runs match than the 1000 shown"));

  testing::CliOutput all = RunsList({"--all"});
  ASSERT_EQ(all.code, 0) << all.err;
  const std::vector<std::string> lines = Lines(all.out);
  ASSERT_EQ(lines.size(), kRuns + 1u);
  EXPECT_THAT(lines[kOldRun + 1], HasSubstr(kOldId));
  EXPECT_THAT(lines[kOldRun + 1], HasSubstr("interrupted"));
  EXPECT_EQ(lines[1500].find("clean"), lines[1].find("clean")) << "the pages of --all line up";
  EXPECT_EQ(all.err, "");

  EXPECT_NE(RunsList({"--all", "--limit", "5"}).code, 0) << "the two flags exclude each other";
}

}  // namespace
}  // namespace stagewatch
