// `stagewatch runs list` a page at a time: --all writes the same JSON array and table as one
// page would, a page at a time; the flags are checked.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "json_text.h"
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

}  // namespace
}  // namespace stagewatch
