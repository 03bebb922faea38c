#include "runs/agent_presence.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

std::string LockPath(const std::string& ledger_path) { return ledger_path + ".agent"; }

}  // namespace

absl::StatusOr<AgentPresence> AgentPresence::Announce(const std::string& ledger_path) {
  const std::string path = LockPath(ledger_path);
  // Not through a link: root would create the file wherever it pointed.
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  // Blocking: a launcher's probe holds the lock exclusively for a moment only.
  if (flock(fd, LOCK_SH) != 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", std::strerror(err)));
  }
  return AgentPresence(fd);
}

bool AgentPresence::Announced(const std::string& ledger_path) {
  const int fd = open(LockPath(ledger_path).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // drops the lock if it was taken
  return held;
}

AgentPresence::AgentPresence(AgentPresence&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

AgentPresence& AgentPresence::operator=(AgentPresence&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

AgentPresence::~AgentPresence() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace stagewatch
