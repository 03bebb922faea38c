// What the real binary exits with when it refuses what it was asked: 1 for the agent and the
// other subcommands, 125 for `stagewatch run` (never a code its command could exit with), and
// never CLI11's own 105-109. docs/configuration.md and docs/runs.md promise these.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::AgentProcess;

struct Refusal {
  std::vector<std::string> args;
  int code;
  std::string says;
};

TEST(ExitCodes, RefusalsExitOneOrTheLaunchersOwn125) {
  const std::string missing = "/nonexistent-stagewatch-dir/config.yaml";
  const std::vector<Refusal> refusals = {
      // The agent: a configuration it cannot load, a flag it does not know or cannot take.
      {{"--config.file", missing}, 1, missing},
      {{"--no-such-flag"}, 1, "--no-such-flag"},
      {{"--capabilities.keep", "all"}, 1, "would keep every capability"},
      {{"--config.file", missing, "check-config", missing}, 1, missing},
      {{"runs", "list", "--limit", "0"}, 1, "--limit"},
      // The launcher: flag errors, a bad size, a configuration it cannot load.
      {{"run", "--stage", "s", "--cpu-weight", "0", "--", "true"}, 125, "--cpu-weight"},
      {{"run", "--stage", "s", "--bogus", "--", "true"}, 125, "--bogus"},
      {{"run", "--", "true"}, 125, "--stage"},
      {{"run", "--stage", "s", "--memory-max", "lots", "--", "true"}, 125, "is not a size"},
      {{"run", "--stage", "s", "--cpuset-cpus", "1-", "--", "true"}, 125, "is not a list of CPUs"},
      {{"--config.file", missing, "run", "--stage", "s", "--", "true"}, 125, missing},
  };
  for (const Refusal& r : refusals) {
    AgentProcess process(r.args);
    EXPECT_EQ(process.WaitExit(), r.code) << ::testing::PrintToString(r.args) << "\n"
                                          << process.log();
    EXPECT_THAT(process.log(), HasSubstr(r.says)) << ::testing::PrintToString(r.args);
  }
}

TEST(ExitCodes, HelpAndVersionExitZero) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"--version"}, {"run", "--help"}}) {
    AgentProcess process(args);
    EXPECT_EQ(process.WaitExit(), 0) << ::testing::PrintToString(args) << process.log();
  }
}

}  // namespace
}  // namespace stagewatch
