// `stagewatch runs list` a page at a time: --all writes the same JSON array and table as one
// page would, a page at a time; the flags are checked.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "json_text.h"
#include "absl/strings/str_cat.h"
#include "units.h"
#include "runs/ledger.h"
#include "runs/runs_report.h"
#include "runs_cli_runner.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::RunCli;
using testing::Started;
using testing::TempDir;

class RunsListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ledger = *Ledger::Open(path_);
    ASSERT_TRUE(ledger->BeginBatch().ok());
    for (int i = 0; i < 2500; ++i) {  // more than one of --all's pages of 1,000
      RunStart run = Started(absl::StrCat("r", 10000 + i), "s", At(i));
      // Open and of no launcher: `runs list` closes the open runs of dead launchers first.
      run.source = RunSource::kDiscovered;
      ASSERT_TRUE(ledger->BeginRun(run).ok());
    }
    ASSERT_TRUE(ledger->CommitBatch().ok());
  }
  TempDir dir_;
  const std::string path_ = dir_.file("ledger.db");
};

TEST_F(RunsListTest, AllWritesWhatOnePageWouldAPageAtATime) {
  auto ledger = *Ledger::OpenForReading(path_);
  const std::vector<RunRecord> every = *ledger->List({.limit = 10000});
  ASSERT_EQ(every.size(), 2500u);
  nlohmann::json array = nlohmann::json::array();
  for (const RunRecord& r : every) array.push_back(RunToJson(r, RunsConfig{}));

  testing::CliOutput json = RunCli({"runs", "list", "--ledger.path", path_, "--all", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out, JsonText(array, 2) + "\n");
  EXPECT_EQ(json.err, "");
  testing::CliOutput table = RunCli({"runs", "list", "--ledger.path", path_, "--all"});
  EXPECT_EQ(table.out, RunsTable(every, RunsConfig{}));

  testing::CliOutput none =
      RunCli({"runs", "list", "--ledger.path", path_, "--stage", "other", "--json"});
  EXPECT_EQ(none.out, "[]\n");
  EXPECT_EQ(RunCli({"runs", "list", "--ledger.path", path_, "--stage", "other"}).out,
            "no runs\n");
}

TEST_F(RunsListTest, BadFlagsAreRefused) {
  EXPECT_NE(RunCli({"runs", "list", "--ledger.path", path_, "--limit", "0"}).code, 0);
  EXPECT_NE(RunCli({"runs", "list", "--ledger.path", path_, "--verdict", "great"}).code, 0);
  EXPECT_NE(RunCli({"runs", "list", "--ledger.path", path_, "--all", "--limit", "2"}).code, 0);
  testing::CliOutput running =
      RunCli({"runs", "list", "--ledger.path", path_, "--verdict", "running", "--limit", "2"});
  EXPECT_EQ(running.code, 0);
  EXPECT_THAT(running.out, HasSubstr("r12499"));
  EXPECT_THAT(running.err, HasSubstr("more runs match than the 2 shown"));
}

// As sacct: --since and --until (a duration ago or a time) bound the runs' starts, -o picks
// the columns; --json keeps every field whatever -o says.
TEST_F(RunsListTest, SinceUntilAndChosenColumns) {
  const std::string since = FormatRfc3339(At(100)), until = FormatRfc3339(At(110));
  testing::CliOutput table = RunCli({"runs", "list", "--ledger.path", path_, "--since", since,
                                     "--until", until, "-o", "id,stage,verdict"});
  ASSERT_EQ(table.code, 0) << table.err;
  std::string want = "ID      STAGE  VERDICT\n";
  for (int i = 109; i >= 100; --i) absl::StrAppend(&want, "r", 10000 + i, "  s      running\n");
  EXPECT_EQ(table.out, want);
  testing::CliOutput json = RunCli({"runs", "list", "--ledger.path", path_, "--since", since,
                                    "--until", until, "--fields", "id", "--json"});
  const nlohmann::json runs = nlohmann::json::parse(json.out);
  ASSERT_EQ(runs.size(), 10u);
  EXPECT_TRUE(runs[0].contains("verdict") && runs[0].contains("efficiency"));
  // Every run of the ledger started more than a year ago.
  EXPECT_EQ(RunCli({"runs", "list", "--ledger.path", path_, "--until", "1d", "--limit", "1",
                    "-o", "id"}).out, "ID\nr12499\n");

  testing::CliOutput bad = RunCli({"runs", "list", "--ledger.path", path_, "-o", "id,nope"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("no column \"nope\"; the columns are id,stage,pipeline"));
  bad = RunCli({"runs", "list", "--ledger.path", path_, "--since", until, "--until", since});
  EXPECT_THAT(bad.err, HasSubstr("--until (" + since + ") must come after --since"));
  bad = RunCli({"runs", "list", "--ledger.path", path_, "--until", "soon"});
  EXPECT_THAT(bad.err, HasSubstr("--until \"soon\" is neither a duration"));
}

// --pipeline keeps the runs of one pipeline; the user and host who ran them are columns.
TEST_F(RunsListTest, ThePipelineFilterAndWhoRanThem) {
  {
    auto ledger = *Ledger::Open(path_);
    for (int i = 0; i < 3; ++i) {
      RunStart run = Started(absl::StrCat("night-", i), "train", At(5000 + i));
      run.pipeline = i < 2 ? "nightly" : "weekly";
      run.pipeline_run = "2026-12-03";
      run.uid = 1000;
      run.user = "alice";
      run.host = "node-1";
      ASSERT_TRUE(ledger->BeginRun(run).ok());
    }
  }
  testing::CliOutput out = RunCli({"runs", "list", "--ledger.path", path_, "--pipeline",
                                   "nightly", "-o", "id,pipeline,user,host"});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(out.out, "ID       PIPELINE  USER   HOST\n"
                     "night-1  nightly   alice  node-1\n"
                     "night-0  nightly   alice  node-1\n");
  testing::CliOutput shown = RunCli({"runs", "show", "--ledger.path", path_, "night-0"});
  EXPECT_THAT(shown.out, HasSubstr("nightly, run 2026-12-03"));
  EXPECT_THAT(shown.out, HasSubstr("alice (uid 1000) on node-1"));
}

}  // namespace
}  // namespace stagewatch
