#include "cgroup/limit_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "log.h"

namespace stagewatch {

LimitWatch::LimitWatch(std::vector<std::string> files)
    : files_(std::move(files)), fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (fd_ < 0) {
    Log::Warn("cannot watch memory limits; each cgroup's is read once a minute",
              {{"err", std::strerror(errno)}});
  }
}

LimitWatch::~LimitWatch() {
  if (fd_ >= 0) close(fd_);  // drops every watch
}

bool LimitWatch::Add(uint64_t id, const std::string& dir) {
  if (fd_ < 0 || dir.empty()) return false;  // no memory hierarchy: nothing to watch
  Remove(id);
  std::vector<int> wds;
  for (const std::string& file : files_) {
    const int wd = inotify_add_watch(fd_, (dir + "/" + file).c_str(), IN_MODIFY);
    if (wd < 0) {
      static bool said = false;
      if (errno == ENOSPC && !std::exchange(said, true)) {
        Log::Warn("out of inotify watches (sysctl fs.inotify.max_user_watches): the memory "
                  "limits of further cgroups are read once a minute");
      }
      for (int added : wds) inotify_rm_watch(fd_, added);
      return false;
    }
    wds.push_back(wd);
  }
  for (int wd : wds) id_of_[wd] = id;
  wds_of_[id] = std::move(wds);
  return true;
}

void LimitWatch::Remove(uint64_t id) {
  auto it = wds_of_.find(id);
  if (it == wds_of_.end()) return;
  for (int wd : it->second) {
    inotify_rm_watch(fd_, wd);  // EINVAL when the kernel dropped it with its file: no matter
    id_of_.erase(wd);
  }
  wds_of_.erase(it);
}

LimitWatch::Written LimitWatch::Take() {
  Written written;
  if (fd_ < 0) return written;
  alignas(inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      if (e->mask & IN_Q_OVERFLOW) written.all = true;
      if (!(e->mask & IN_MODIFY)) continue;  // IN_IGNORED: a removed cgroup's file
      if (auto it = id_of_.find(e->wd); it != id_of_.end()) written.ids.insert(it->second);
    }
  }
  return written;
}

}  // namespace stagewatch
