// What a run's command computed: a JSON object or `name value` lines, each bad entry reported
// and skipped, the rest kept; a file too large, not UTF-8 or not a regular file reads nothing.
#include "runs/run_results.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::SizeIs;

TEST(RunResultsTest, AJsonObjectOfNumbers) {
  const ParsedResults r = ParseResults(R"({"accuracy": 0.9547, "rows": 120000, "loss": -1e-3})");
  EXPECT_THAT(r.values, ElementsAre(Pair("accuracy", 0.9547), Pair("loss", -1e-3),
                                    Pair("rows", 120000)));
  EXPECT_THAT(r.problems, SizeIs(0));
}

TEST(RunResultsTest, NameValueLinesWithCommentsAndBlankLines) {
  const ParsedResults r = ParseResults("# validation\naccuracy 0.9547\n\n  rows\t120000  \n");
  EXPECT_THAT(r.values, ElementsAre(Pair("accuracy", 0.9547), Pair("rows", 120000)));
  EXPECT_THAT(r.problems, SizeIs(0));
}

TEST(RunResultsTest, BadEntriesAreReportedAndSkippedAndTheRestKept) {
  const ParsedResults lines =
      ParseResults("accuracy 0.95\nrows many\n9lives 1\nloss nan\nf1 inf\na b c\nok 1\n");
  EXPECT_THAT(lines.values, ElementsAre(Pair("accuracy", 0.95), Pair("ok", 1)));
  ASSERT_THAT(lines.problems, SizeIs(5));
  EXPECT_THAT(lines.problems[0], HasSubstr("line 2: result \"rows\" is not a finite number"));
  EXPECT_THAT(lines.problems[1], HasSubstr("line 3: result name \"9lives\" is not valid"));
  EXPECT_THAT(lines.problems[4], HasSubstr("line 6: write one result per line"));
  const ParsedResults json = ParseResults(R"({"accuracy": "high", "rows": 3, "ok": true})");
  EXPECT_THAT(json.values, ElementsAre(Pair("rows", 3)));
  EXPECT_THAT(json.problems, SizeIs(2));
  EXPECT_THAT(ParseResults("{not json").problems,
              ElementsAre(HasSubstr("not a JSON object")));
  EXPECT_THAT(ParseResults("[1, 2]").problems, SizeIs(1));
}

TEST(RunResultsTest, TextThatIsNotUtf8ReadsNothing) {
  const ParsedResults r = ParseResults("accuracy 0.95\nname\xff 1\n");
  EXPECT_TRUE(r.values.empty());
  EXPECT_THAT(r.problems, ElementsAre(HasSubstr("not UTF-8")));
  EXPECT_TRUE(ParseResults("caf\xc3\xa9 1\n").values.empty());  // UTF-8, but not a valid name
  EXPECT_THAT(ParseResults("caf\xc3\xa9 1\n").problems, ElementsAre(HasSubstr("not valid")));
}

TEST(RunResultsTest, AtMostMaxResultsNames) {
  std::string text;
  for (size_t i = 0; i < kMaxResults + 5; ++i) text += "r" + std::to_string(i) + " 1\n";
  const ParsedResults r = ParseResults(text);
  EXPECT_EQ(r.values.size(), kMaxResults);
  EXPECT_THAT(r.problems, SizeIs(5));
}

TEST(RunResultsTest, WordsAsTheResultsCommandTakesThem) {
  const ParsedResults r = ParseResultWords({"accuracy=0.95", "rows=12", "loss", "x=y"});
  EXPECT_THAT(r.values, ElementsAre(Pair("accuracy", 0.95), Pair("rows", 12)));
  EXPECT_THAT(r.problems, ElementsAre(HasSubstr("name=value"), HasSubstr("not a finite")));
}

TEST(RunResultsTest, AFileIsReadOnlyWhenRegularAndSmall) {
  testing::TempDir dir;
  EXPECT_TRUE(absl::IsNotFound(ReadResultsFile(dir.file("none")).status()));
  std::ofstream(dir.file("ok")) << "{\"accuracy\": 0.5}";
  absl::StatusOr<ParsedResults> ok = ReadResultsFile(dir.file("ok"));
  ASSERT_TRUE(ok.ok());
  EXPECT_THAT(ok->values, ElementsAre(Pair("accuracy", 0.5)));
  std::ofstream(dir.file("huge")) << std::string(kMaxResultsFileBytes + 1, '#');
  absl::StatusOr<ParsedResults> huge = ReadResultsFile(dir.file("huge"));
  ASSERT_TRUE(huge.ok());
  EXPECT_TRUE(huge->values.empty());
  EXPECT_THAT(huge->problems, ElementsAre(HasSubstr("nothing was read")));
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  absl::StatusOr<ParsedResults> fifo = ReadResultsFile(dir.file("fifo"));  // must not block
  ASSERT_TRUE(fifo.ok());
  EXPECT_THAT(fifo->problems, SizeIs(1));
}

}  // namespace
}  // namespace stagewatch
