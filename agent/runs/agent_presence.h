// Whether an agent records runs into a ledger right now. The agent holds a shared flock on
// "<ledger>.agent" for as long as it watches runs; the kernel drops the lock when the agent
// dies, so a crashed agent is never taken for a live one. The launcher asks before it waits
// for the facts only the agent adds at a run's end.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace stagewatch {

class AgentPresence {
 public:
  // Held by the agent. Creates the lock file beside the ledger when it is missing.
  static absl::StatusOr<AgentPresence> Announce(const std::string& ledger_path);
  // Asked by the launcher: whether some agent holds the lock.
  static bool Announced(const std::string& ledger_path);

  AgentPresence(AgentPresence&& other) noexcept;
  AgentPresence& operator=(AgentPresence&& other) noexcept;
  AgentPresence(const AgentPresence&) = delete;
  AgentPresence& operator=(const AgentPresence&) = delete;
  ~AgentPresence();

 private:
  explicit AgentPresence(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace stagewatch
