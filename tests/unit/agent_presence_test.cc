// The agent's presence lock beside the ledger: seen while held, gone when dropped or when the
// holder dies (the kernel releases a dead process's flock).
#include "runs/agent_presence.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

TEST(AgentPresenceTest, AnnouncedWhileHeldAndNotAfter) {
  testing::TempDir dir;
  const std::string ledger = dir.file("ledger.db");
  EXPECT_FALSE(AgentPresence::Announced(ledger)) << "no lock file yet";
  {
    absl::StatusOr<AgentPresence> held = AgentPresence::Announce(ledger);
    ASSERT_TRUE(held.ok()) << held.status();
    EXPECT_TRUE(AgentPresence::Announced(ledger));
    EXPECT_TRUE(AgentPresence::Announced(ledger)) << "asking does not take it away";
    absl::StatusOr<AgentPresence> second = AgentPresence::Announce(ledger);
    ASSERT_TRUE(second.ok()) << "two agents may share a ledger";
  }
  EXPECT_FALSE(AgentPresence::Announced(ledger));
}

TEST(AgentPresenceTest, AnAgentThatDiesIsNotAnnounced) {
  testing::TempDir dir;
  const std::string ledger = dir.file("ledger.db");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t agent = fork();
  if (agent == 0) {
    absl::StatusOr<AgentPresence> held = AgentPresence::Announce(ledger);
    (void)!write(ready[1], held.ok() ? "y" : "n", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_TRUE(AgentPresence::Announced(ledger));
  kill(agent, SIGKILL);
  waitpid(agent, nullptr, 0);
  EXPECT_FALSE(AgentPresence::Announced(ledger));
  close(ready[0]);
  close(ready[1]);
}

TEST(AgentPresenceTest, AnUnwritableDirectoryIsAnError) {
  absl::StatusOr<AgentPresence> held = AgentPresence::Announce("/nonexistent-dir/ledger.db");
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.status().message().find("/nonexistent-dir/ledger.db.agent"), std::string::npos)
      << held.status();
}

}  // namespace
}  // namespace stagewatch
