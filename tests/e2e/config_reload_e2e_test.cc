// SIGHUP loads the configuration again: a bad file is refused and the agent runs on with the
// one in use; a good one applies its log section at once and names what needs a restart.
#include <signal.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;

TEST(ConfigReload, SighupRefusesABadFileAndAppliesAGoodOne) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string path = testing::WriteTempConfig("log:\n  level: info\n");
  AgentProcess agent({"--config.file", path, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  testing::WriteFile(path, "log:\n  level: loud\n");
  ASSERT_EQ(kill(agent.pid(), SIGHUP), 0);
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return agent.log().find("configuration not reloaded") != std::string::npos; }, 5000))
      << agent.log();
  EXPECT_NE(agent.log().find("loud"), std::string::npos) << agent.log();  // says what is wrong
  ASSERT_EQ(kill(agent.pid(), 0), 0) << agent.log();
  EXPECT_TRUE(agent.Get("/-/healthy").has_value());

  // log applies at once (JSON lines from here on); stages is named for a restart.
  testing::WriteFile(path,
                     "log:\n  level: debug\n  format: json\n"
                     "stages:\n  - name: reloaded\n    cgroup_paths: [/stagewatch-reload-test]\n");
  ASSERT_EQ(kill(agent.pid(), SIGHUP), 0);
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return agent.log().find("\"msg\":\"configuration reloaded\"") != std::string::npos;
      },
      5000))
      << agent.log();
  const std::string log = agent.log();
  EXPECT_NE(log.find("\"log_level\":\"debug\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"sections\":\"stages\""), std::string::npos) << log;
  EXPECT_TRUE(agent.Get("/-/healthy").has_value());
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
  unlink(path.c_str());
}

}  // namespace
}  // namespace stagewatch
