#include "log.h"

#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kTs = "2026-11-29T19:42:13.123Z";

TEST(LogFormatTest, LogfmtLine) {
  EXPECT_EQ(FormatLogLine(LogFormat::kLogfmt, kTs, LogLevel::kInfo, "listening",
                          {{"address", "127.0.0.1:9617"}, {"port", 9617}, {"tls", false}}),
            "ts=2026-11-29T19:42:13.123Z level=info msg=\"listening\" address=127.0.0.1:9617 "
            "port=9617 tls=false");
}

TEST(LogFormatTest, LogfmtQuotesOnlyWhenNeeded) {
  EXPECT_EQ(FormatLogLine(LogFormat::kLogfmt, kTs, LogLevel::kWarn, "m",
                          {{"plain", "a/b-c"},
                           {"space", "a b"},
                           {"empty", ""},
                           {"eq", "k=v"},
                           {"quote", "say \"hi\""},
                           {"backslash", "C:\\x"},
                           {"newline", "one\ntwo"}}),
            "ts=2026-11-29T19:42:13.123Z level=warn msg=\"m\" plain=a/b-c space=\"a b\" "
            "empty=\"\" eq=\"k=v\" quote=\"say \\\"hi\\\"\" backslash=C:\\x "
            "newline=\"one\\ntwo\"");
}

TEST(LogFormatTest, LogfmtEscapesMessage) {
  EXPECT_EQ(FormatLogLine(LogFormat::kLogfmt, kTs, LogLevel::kError, "bad \"x\"\\\n", {}),
            "ts=2026-11-29T19:42:13.123Z level=error msg=\"bad \\\"x\\\"\\\\\\n\"");
}

TEST(LogFormatTest, JsonLine) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTs, LogLevel::kDebug, "probe attached",
                          {{"probe", "oom"}, {"fd", 7}, {"up", true}, {"ratio", 0.5}}),
            "{\"ts\":\"2026-11-29T19:42:13.123Z\",\"level\":\"debug\",\"msg\":\"probe "
            "attached\",\"probe\":\"oom\",\"fd\":7,\"up\":true,\"ratio\":0.5}");
}

TEST(LogFormatTest, JsonEscaping) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTs, LogLevel::kInfo, "a\"b\\c",
                          {{"ctl", std::string("x\x01y\n\t\r\0", 7)}, {"empty", ""}}),
            "{\"ts\":\"2026-11-29T19:42:13.123Z\",\"level\":\"info\",\"msg\":\"a\\\"b\\\\c\","
            "\"ctl\":\"x\\u0001y\\n\\t\\r\\u0000\",\"empty\":\"\"}");
}

// A cgroup or process name is any bytes: the line stays valid JSON (and valid UTF-8 for a
// logfmt reader), with U+FFFD for the bytes that are not UTF-8.
TEST(LogFormatTest, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTs, LogLevel::kInfo, "m",
                          {{"cgroup", "tr\xff" "ain/\xc3\xa9t\xc3\xa9"}}),
            "{\"ts\":\"2026-11-29T19:42:13.123Z\",\"level\":\"info\",\"msg\":\"m\","
            "\"cgroup\":\"tr\xef\xbf\xbd" "ain/\xc3\xa9t\xc3\xa9\"}");
  EXPECT_EQ(FormatLogLine(LogFormat::kLogfmt, kTs, LogLevel::kInfo, "m\xff", {}),
            "ts=2026-11-29T19:42:13.123Z level=info msg=\"m\xef\xbf\xbd\"");
}

TEST(LogFieldTest, RendersValues) {
  EXPECT_EQ(LogField("x", 0.123456789).value, "0.123457");
  EXPECT_EQ(LogField("x", 1e20).value, "1e+20");
  EXPECT_EQ(LogField("x", 3.0).value, "3");
  EXPECT_FALSE(LogField("x", 3.0).quoted);
  EXPECT_EQ(LogField("x", int64_t{-5}).value, "-5");
  EXPECT_EQ(LogField("x", uint64_t{18446744073709551615u}).value, "18446744073709551615");
  EXPECT_TRUE(LogField("x", "s").quoted);
  EXPECT_FALSE(LogField("x", 1).quoted);
}

TEST(LogFieldTest, NonFiniteDoubleIsAJsonString) {
  const LogField nan("v", std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(nan.quoted);
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, kTs, LogLevel::kInfo, "m",
                          {{"v", std::numeric_limits<double>::infinity()}}),
            "{\"ts\":\"2026-11-29T19:42:13.123Z\",\"level\":\"info\",\"msg\":\"m\",\"v\":\"inf\"}");
}

TEST(LogParseTest, Levels) {
  EXPECT_EQ(ParseLogLevel("debug").value(), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("info").value(), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warn").value(), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("error").value(), LogLevel::kError);
  const auto bad = ParseLogLevel("verbose");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown log level \"verbose\"; use one of debug, info, warn, error");
}

TEST(LogParseTest, Formats) {
  EXPECT_EQ(ParseLogFormat("logfmt").value(), LogFormat::kLogfmt);
  EXPECT_EQ(ParseLogFormat("json").value(), LogFormat::kJson);
  const auto bad = ParseLogFormat("text");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown log format \"text\"; use one of logfmt, json");
}

// Restores the process-wide logger whatever a test did to it.
class LogWriteTest : public ::testing::Test {
 protected:
  void SetUp() override { Log::SetSink(&out_); }
  void TearDown() override {
    Log::SetSink(nullptr);
    Log::Configure(LogLevel::kInfo, LogFormat::kLogfmt);
  }
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::ostringstream out_;
};

TEST_F(LogWriteTest, DropsMessagesBelowLevel) {
  Log::Configure(LogLevel::kWarn, LogFormat::kLogfmt);
  EXPECT_FALSE(Log::Enabled(LogLevel::kDebug));
  EXPECT_FALSE(Log::Enabled(LogLevel::kInfo));
  EXPECT_TRUE(Log::Enabled(LogLevel::kWarn));
  EXPECT_TRUE(Log::Enabled(LogLevel::kError));
  Log::Debug("d");
  Log::Info("i");
  Log::Warn("w", {{"n", 1}});
  Log::Error("e");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  EXPECT_THAT(lines[0], HasSubstr(" level=warn msg=\"w\" n=1"));
  EXPECT_THAT(lines[1], HasSubstr(" level=error msg=\"e\""));
}

TEST_F(LogWriteTest, DebugLevelWritesEverything) {
  Log::Configure(LogLevel::kDebug, LogFormat::kLogfmt);
  Log::Debug("d");
  Log::Info("i");
  EXPECT_EQ(Lines().size(), 2u);
}

TEST_F(LogWriteTest, WritesTimestampedLogfmtLine) {
  Log::Configure(LogLevel::kInfo, LogFormat::kLogfmt);
  Log::Info("listening", {{"address", "127.0.0.1:9617"}});
  EXPECT_TRUE(std::regex_match(
      out_.str(), std::regex(R"(ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=info )"
                             R"(msg="listening" address=127\.0\.0\.1:9617\n)")))
      << out_.str();
}

TEST_F(LogWriteTest, WritesJsonLine) {
  Log::Configure(LogLevel::kInfo, LogFormat::kJson);
  Log::Info("scraped", {{"seconds", 0.25}});
  EXPECT_TRUE(std::regex_match(
      out_.str(), std::regex(R"(\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"info",)"
                             R"("msg":"scraped","seconds":0\.25\}\n)")))
      << out_.str();
}

TEST_F(LogWriteTest, ConcurrentLinesDoNotInterleave) {
  Log::Configure(LogLevel::kInfo, LogFormat::kLogfmt);
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i) {
        Log::Info("tick", {{"thread", t}, {"i", i}, {"pad", std::string(100, 'x')}});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  const std::regex whole(R"(ts=\S+ level=info msg="tick" thread=\d i=\d+ pad=x{100})");
  for (const std::string& line : lines) ASSERT_TRUE(std::regex_match(line, whole)) << line;
}

}  // namespace
}  // namespace stagewatch
