// The line a finished run leaves in the agent's log, in logfmt (the e2e test reads the JSON
// form from a real agent): every figure known, none made up.
#include "runs/run_end_log.h"

#include <sstream>
#include <string>

#include "config/runs_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "log.h"

namespace stagewatch {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

class LogRunFinishedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Log::Configure(LogLevel::kInfo, LogFormat::kLogfmt);
    Log::SetSink(&out_);
  }
  void TearDown() override { Log::SetSink(nullptr); }
  std::ostringstream out_;
};

TEST_F(LogRunFinishedTest, OneLogfmtLineWithTheVerdictReasonsAndFigures) {
  RunRecord run;
  run.start = {.id = "r-1", .stage = "train", .pipeline = "nightly",
               .start = absl::FromUnixSeconds(1000)};
  run.start.limits.memory_max_bytes = 1 << 30;
  run.end = RunEnd{.end = absl::FromUnixSeconds(1090), .signal = 9};
  run.end->facts.cpu_seconds = 45.5;
  run.end->facts.memory_peak_bytes = 1073741824;
  run.end->facts.oom_kills_kernel = 1;
  run.agent.oom_kills_userspace = 0;
  LogRunFinished(run, JudgeRun(run, RunsConfig{}));
  const std::string line = out_.str();
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
  EXPECT_THAT(line, HasSubstr(" level=info msg=\"run finished\" run_id=r-1 stage=train "
                              "pipeline=nightly verdict=interrupted reasons=oom_kill "
                              "signal=SIGKILL wall_seconds=90 cpu_seconds=45.5 "
                              "memory_peak_bytes=1073741824 memory_limit_bytes=1073741824 "
                              "oom_kills=1\n"));
}

TEST_F(LogRunFinishedTest, UnknownFiguresAreLeftOutNotZero) {
  RunRecord run;
  run.start = {.id = "r-2", .stage = "etl", .start = absl::FromUnixSeconds(1000)};
  run.end = RunEnd{.end = absl::FromUnixSeconds(1001), .exit_code = 0};
  LogRunFinished(run, JudgeRun(run, RunsConfig{}));
  const std::string line = out_.str();
  EXPECT_THAT(line, HasSubstr("run_id=r-2 stage=etl verdict="));
  EXPECT_THAT(line, HasSubstr(" exit_code=0 wall_seconds=1"));
  for (const char* absent : {"pipeline=", "cpu_seconds=", "memory_peak_bytes=",
                             "memory_limit_bytes=", "oom_kills=", "signal="}) {
    EXPECT_THAT(line, Not(HasSubstr(absent)));
  }
}

}  // namespace
}  // namespace stagewatch
