#include "app/ring_pollers.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "log.h"
#include "thread_name.h"

namespace stagewatch {

namespace {

void Drain(const RingPoller& ring, int stop_fd) {
  NameThisThread(std::string("sw-ring-") + ring.probe);
  pollfd fds[2] = {{.fd = ring.ready_fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
  while (true) {
    if (poll(fds, 2, /*timeout=*/-1) < 0) {
      if (errno == EINTR) continue;
      Log::Error("waiting on a ring buffer failed",
                 {{"probe", ring.probe}, {"err", strerror(errno)}});
      return;
    }
    if (fds[1].revents != 0) return;
    if (int rc = ring.consume(); rc < 0 && rc != -EINTR) {
      Log::Error("polling a ring buffer failed", {{"probe", ring.probe}, {"err", strerror(-rc)}});
      return;
    }
  }
}

}  // namespace

absl::Status RingPollers::Start(const std::vector<RingPoller>& rings) {
  if (rings.empty()) return absl::OkStatus();
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  for (const RingPoller& ring : rings) {
    threads_.emplace_back([ring, fd = stop_fd_] { Drain(ring, fd); });
  }
  return absl::OkStatus();
}

void RingPollers::Stop() {
  if (stop_fd_ < 0) return;
  const uint64_t one = 1;
  // Stays readable (nobody reads it), so every thread sees it.
  if (write(stop_fd_, &one, sizeof(one)) != sizeof(one)) {
    Log::Error("cannot wake the ring buffer threads", {{"err", strerror(errno)}});
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  close(stop_fd_);
  stop_fd_ = -1;
}

}  // namespace stagewatch
