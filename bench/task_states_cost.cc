// The CPU time of one pass of task-state reads over every cgroup beneath a directory, as the
// memory collector makes at each scrape, three ways: each thread's /proc/<tid>/stat opened anew
// (one-shot reads), the files a TaskStateReader keeps open (the /proc fallback), and one pass
// of the task_states BPF iterator over the host's threads, looked up by each cgroup's id (the
// default where it loads). Rotates the order of the three, checks they count the same, and
// prints the median CPU time per pass of each.
// Usage: task_states_cost <cgroup directory> [passes]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cgroup/layout.h"
#include "cgroup/path_cache.h"
#include "cgroup/task_states.h"
#include "cpu_time.h"
#include "probes/features.h"
#include "signals/memory/task_states_probe.h"

using stagewatch::bench::CpuMs;
using stagewatch::bench::Median;

namespace {

uint64_t Total(const stagewatch::TaskStateCounts& c) {
  return c.runnable + c.sleeping + c.uninterruptible + c.stopped + c.zombie;
}

struct Cgroup {
  std::string dir;
  uint64_t id;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <cgroup directory> [passes]\n", argv[0]);
    return 2;
  }
  const int passes = argc > 2 ? std::atoi(argv[2]) : 21;
  std::vector<Cgroup> cgroups{{argv[1], stagewatch::CgroupIdOfDirectory(argv[1]).value_or(0)}};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (!entry.is_directory()) continue;
    cgroups.push_back({entry.path(), stagewatch::CgroupIdOfDirectory(entry.path()).value_or(0)});
  }
  auto layout = stagewatch::DetectHostCgroupLayout();
  if (!layout.ok()) {
    std::fprintf(stderr, "cgroup layout: %s\n", layout.status().ToString().c_str());
    return 1;
  }
  auto iterator = stagewatch::TaskStatesProbe::Start(
      {.key = layout->key, .features = stagewatch::ProbeKernelFeatures()});
  if (!iterator.ok()) {
    std::fprintf(stderr, "task iterator: %s\n", iterator.status().ToString().c_str());
    return 1;
  }
  stagewatch::TaskStateReader kept;
  enum Way { kOneShot, kKept, kIterator, kWays };
  std::vector<double> ms[kWays];
  uint64_t threads = 0;
  for (int pass = 0; pass < passes; pass++) {
    uint64_t counted[kWays] = {0, 0, 0};
    for (int order = 0; order < kWays; order++) {
      const Way way = static_cast<Way>((pass + order) % kWays);
      const double start = CpuMs();
      if (way == kIterator) {
        auto all = (*iterator)->Count();
        if (!all.ok()) {
          std::fprintf(stderr, "task iterator pass: %s\n", all.status().ToString().c_str());
          return 1;
        }
        for (const Cgroup& c : cgroups) {
          if (auto it = all->find(c.id); it != all->end()) counted[way] += Total(it->second);
        }
      } else {
        for (const Cgroup& c : cgroups) {
          auto counts = way == kKept ? kept.Read(c.dir) : stagewatch::ReadTaskStates(c.dir);
          if (counts.ok()) counted[way] += Total(*counts);
        }
        if (way == kKept) kept.EndPass();
      }
      ms[way].push_back(CpuMs() - start);
    }
    if (counted[kOneShot] != counted[kKept] || counted[kKept] != counted[kIterator]) {
      std::fprintf(stderr, "pass %d: threads counted one-shot %lu, kept files %lu, iterator %lu\n",
                   pass, counted[kOneShot], counted[kKept], counted[kIterator]);
    }
    threads = counted[kKept];
  }
  const double kept_ms = Median(ms[kKept]);
  std::printf("%zu cgroups, %lu threads, %d passes: one-shot %.2f ms, kept files %.2f ms, "
              "iterator %.2f ms (%.3f x kept files), %zu files kept\n",
              cgroups.size(), threads, passes, Median(ms[kOneShot]), kept_ms,
              Median(ms[kIterator]), Median(ms[kIterator]) / kept_ms, kept.open_files());
  return 0;
}
