// Control characters from the ledger never reach a terminal raw: `runs show` and `runs list` of a
// run whose command, stage, pipeline, victim, killer, preemptor, anomaly and cgroup hold escape
// sequences show them escaped, once; JSON keeps them as JSON escapes.
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs_cli_runner.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::At;
using testing::Started;
using testing::TempDir;

// The first raw control character in `text` outside the line ends ("" when none): C0, DEL,
// a C1 code point in UTF-8, or a byte of no valid UTF-8 (checked by decoding as TerminalText
// does not: a lone continuation byte or a byte above 0xf4 counts).
std::string FirstControl(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = text[i];
    if (c == '\n') continue;
    if (c < 0x20 || c == 0x7f) return absl::StrFormat("0x%02x at %d", c, i);
    if (c == 0xc2 && i + 1 < text.size() && (unsigned char)text[i + 1] <= 0x9f) {
      return absl::StrFormat("C1 at %d", i);
    }
    if ((c >= 0x80 && c < 0xc2) || c > 0xf4) return absl::StrFormat("0x%02x at %d", c, i);
    if (c >= 0xc2) i += c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
  }
  return "";
}

TEST(RunsTextOutputTest, RunsShowAndListShowTheLedgersControlCharactersEscaped) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  {
    auto ledger = *Ledger::Open(path);
    // A stage named by a cgroup's directory may hold any byte; a command's JSON column holds
    // UTF-8 (a byte that is not becomes U+FFFD).
    RunStart start = Started("esc-1", "tr\x9b""ain", At(0));
    start.command = {"python3", "-c", "print('\x1b]0;owned\x07\x1b[2J')", "\x01\x9b"};
    start.pipeline = "night\x1b[31mly";
    start.cgroup_path = "/stagewatch/train/esc\r-1";
    ASSERT_TRUE(ledger->BeginRun(start).ok());
    RunEnd end;
    end.end = At(10);
    end.signal = 9;
    ASSERT_TRUE(ledger->EndRun("esc-1", end).ok());
    AgentFacts facts;
    facts.oom_kills_userspace = 1;
    facts.oom_victims.push_back({42, "py\x1b[5mthon", "userspace", "early\x1b""coom"});
    facts.preemptors = {{"hog\x1b[8m", 3}};
    facts.preemptors_observed = true;
    facts.anomalies.push_back({"memory\x08_climb", At(5), "detail\x1b[0m"});
    facts.anomalies_observed = true;
    ASSERT_TRUE(ledger->AddAgentFacts("esc-1", facts).ok());
  }
  testing::CliOutput show = testing::RunCli({"runs", "show", "--ledger.path", path, "esc-1"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_EQ(FirstControl(show.out), "") << show.out;
  EXPECT_THAT(show.out, HasSubstr("\\x1b]0;owned\\x07\\x1b[2J"));
  EXPECT_THAT(show.out, HasSubstr("\\x01\xef\xbf\xbd"));
  EXPECT_THAT(show.out, HasSubstr("(stage tr\\x9bain)"));
  EXPECT_THAT(show.out, HasSubstr("night\\x1b[31mly"));
  EXPECT_THAT(show.out, HasSubstr("py\\x1b[5mthon (pid 42, userspace by early\\x1bcoom)"));
  EXPECT_THAT(show.out, HasSubstr("hog\\x1b[8m ×3"));
  EXPECT_THAT(show.out, HasSubstr("memory\\x08_climb"));
  EXPECT_THAT(show.out, HasSubstr("esc\\x0d-1"));
  EXPECT_THAT(show.out.substr(0, show.out.find('\n')),
              HasSubstr("killed by a user-space OOM killer by early\\x1bcoom"))
      << "the verdict's line";
  EXPECT_THAT(show.out, Not(HasSubstr("\\\\x1b"))) << "escaped twice";

  testing::CliOutput list = testing::RunCli({"runs", "list", "--ledger.path", path});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(FirstControl(list.out), "") << list.out;
  EXPECT_THAT(list.out, HasSubstr("by early\\x1bcoom"));

  // JSON stays JSON: the strings come back as they were stored.
  testing::CliOutput json =
      testing::RunCli({"runs", "show", "--ledger.path", path, "esc-1", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["command"][3], "\x01\xef\xbf\xbd");
  EXPECT_EQ(nlohmann::json::parse(json.out)["stage"], "tr\xef\xbf\xbd""ain");
  EXPECT_EQ(FirstControl(json.out), "");
}

}  // namespace
}  // namespace stagewatch
