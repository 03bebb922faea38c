// The CPU time of one pass of task-state reads over every cgroup beneath a directory, as the
// memory collector makes at each scrape: opening each thread's /proc/<tid>/stat anew (one-shot
// reads) against reading the files a TaskStateReader keeps open. Alternates the two, checks
// they count the same, and prints the median CPU time per pass of each.
// Usage: task_states_cost <cgroup directory> [passes]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cgroup/task_states.h"
#include "cpu_time.h"

using stagewatch::bench::CpuMs;
using stagewatch::bench::Median;

namespace {

uint64_t Total(const stagewatch::TaskStateCounts& c) {
  return c.runnable + c.sleeping + c.uninterruptible + c.stopped + c.zombie;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <cgroup directory> [passes]\n", argv[0]);
    return 2;
  }
  const int passes = argc > 2 ? std::atoi(argv[2]) : 21;
  std::vector<std::string> cgroups{argv[1]};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (entry.is_directory()) cgroups.push_back(entry.path());
  }
  stagewatch::TaskStateReader kept;
  std::vector<double> one_shot_ms, kept_ms;
  uint64_t threads = 0;
  for (int pass = 0; pass < passes; pass++) {
    uint64_t counted[2] = {0, 0};
    for (int order = 0; order < 2; order++) {
      const bool use_kept = (pass + order) % 2 == 1;  // A B, then B A
      const double start = CpuMs();
      for (const std::string& cgroup : cgroups) {
        auto counts = use_kept ? kept.Read(cgroup) : stagewatch::ReadTaskStates(cgroup);
        if (counts.ok()) counted[use_kept] += Total(*counts);
      }
      if (use_kept) kept.EndPass();
      (use_kept ? kept_ms : one_shot_ms).push_back(CpuMs() - start);
    }
    if (counted[0] != counted[1]) {
      std::fprintf(stderr, "pass %d: one-shot reads counted %lu threads, kept files %lu\n", pass,
                   counted[0], counted[1]);
    }
    threads = counted[1];
  }
  std::printf("%zu cgroups, %lu threads, %d passes: one-shot %.2f ms, kept files %.2f ms "
              "(%.3f x), %zu files kept\n",
              cgroups.size(), threads, passes, Median(one_shot_ms), Median(kept_ms),
              Median(kept_ms) / Median(one_shot_ms), kept.open_files());
  return 0;
}
