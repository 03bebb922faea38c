// Applies the lifecycle probe's lifecycle events to the id ⇄ path cache.
#pragma once

#include "bpf/lifecycle.h"
#include "cgroup/path_cache.h"

namespace stagewatch {

// A mkdir adds the cgroup, an rmdir removes it; populated flips change nothing. A path the
// event had to cut short cannot name anything: the cache walks the hierarchy again instead
// (rare: paths over 1 KiB).
void ApplyLifecycleEvent(const cgroup_event& event, CgroupPathCache* paths);

}  // namespace stagewatch
