// Names the agent's threads ("sw-sampler", "sw-runs", ...), so that each one's CPU time can be
// read from /proc/<pid>/task/<tid>/stat and told apart in perf and top. (The HTTP server's
// threads name themselves "MHD-worker".)
#pragma once

#include <string_view>

namespace stagewatch {

// Names the calling thread: at most 15 characters are kept (the kernel's limit).
void NameThisThread(std::string_view name);

}  // namespace stagewatch
