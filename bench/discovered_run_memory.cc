// What the discovered-run sampler holds per open run, in one process: COUNT empty cgroups made
// beneath this process's own cgroup in the keyed hierarchy (as bench/cgroup_scale.sh makes
// them: no mirror in the other hierarchies), each added as a run, then sampled SAMPLES times a
// second apart on a clock of its own (past the limits' and the full reading's periods, and the
// window in which a missing file is looked for). Prints the heap in use (mallinfo2) per run
// after the adds and after each pass, and the samples the runs' series keep. Needs root.
// Usage: discovered_run_memory [COUNT] [SAMPLES]
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cgroup/layout.h"
#include "cgroup/proc_cgroup.h"
#include "runs/discovered_sampler.h"

namespace {

using namespace stagewatch;

size_t HeapInUse() { return mallinfo2().uordblks; }

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int samples = argc > 2 ? std::atoi(argv[2]) : 12;
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  absl::StatusOr<std::string> text = ReadOwnProcCgroupText();
  absl::StatusOr<std::string> own =
      text.ok() ? ParseProcCgroup(*text, layout.ok() ? layout->key : CGROUP_KEY_DEFAULT) : text;
  if (!layout.ok() || !own.ok()) {
    std::fprintf(stderr, "discovered_run_memory: no cgroup layout or own cgroup: %s %s\n",
                 layout.status().ToString().c_str(), own.status().ToString().c_str());
    return 1;
  }
  const std::string parent =
      (*own == "/" ? "" : *own) + "/sw-bench-runs-" + std::to_string(getpid());
  std::vector<std::string> paths;
  for (int i = 0; i < count; i++) paths.push_back(parent + "/run_" + std::to_string(i));
  auto remove_all = [&] {
    for (const std::string& p : paths) rmdir(KeyedDir(*layout, p).c_str());
    rmdir(KeyedDir(*layout, parent).c_str());
  };
  if (mkdir(KeyedDir(*layout, parent).c_str(), 0755) != 0) {
    std::perror("discovered_run_memory: mkdir (run as root)");
    return 1;
  }
  std::vector<uint64_t> ids;
  for (const std::string& p : paths) {
    struct stat st {};
    const std::string dir = KeyedDir(*layout, p);
    if (mkdir(dir.c_str(), 0755) != 0 || stat(dir.c_str(), &st) != 0) {
      std::perror("discovered_run_memory: mkdir");
      remove_all();
      return 1;
    }
    ids.push_back(st.st_ino);
  }
  {
    DiscoveredSampler sampler({.layout = *layout, .reads_per_second = 1000000000});
    const size_t before = HeapInUse();
    auto print = [&](const char* when) {
      std::printf("%-14s heap_in_use=%8zu KiB  per_run=%6.0f B  series_kept=%zu\n", when,
                  (HeapInUse() - before) / 1024, double(HeapInUse() - before) / count,
                  sampler.kept_samples());
      std::fflush(stdout);
    };
    absl::Time now = absl::Now();
    for (int i = 0; i < count; i++) {
      sampler.Add("run-" + std::to_string(i), paths[i], ids[i], now);
    }
    print("added");
    for (int pass = 1; pass <= samples; pass++) {
      sampler.Sample(now);
      sampler.TakePoints();
      now += absl::Seconds(1);
      print(("sample " + std::to_string(pass)).c_str());
    }
    std::printf("reads %llu over %d runs\n", static_cast<unsigned long long>(sampler.reads()),
                count);
  }
  remove_all();
  return 0;
}
