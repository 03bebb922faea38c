#include "signals/lifecycle/lifecycle_events.h"

#include <cstring>
#include <string>

namespace stagewatch {

void ApplyLifecycleEvent(const cgroup_event& event, CgroupPathCache* paths) {
  // Populated flips name nothing new (the run watcher uses them).
  if (event.kind != CGROUP_EVENT_MKDIR && event.kind != CGROUP_EVENT_RMDIR) return;
  const size_t len = strnlen(event.path, sizeof(event.path));
  const bool cut = len >= sizeof(event.path) - 1;
  std::string path(event.path, len);
  if (path.empty() || path[0] != '/') path = "/" + path;
  if (event.kind == CGROUP_EVENT_RMDIR) {
    paths->OnRmdir(event.cgroup_id, std::move(path));
  } else if (cut) {
    paths->Resync();
  } else {
    paths->OnMkdir(event.cgroup_id, std::move(path));
  }
}

}  // namespace stagewatch
