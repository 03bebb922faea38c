// The CPU time of one sampling pass over stage tops as the sampler makes it every
// memory.sample_interval: memory.pressure, io.pressure, cpu.pressure and cpu.stat of each, each
// file opened anew (one-shot reads, as the collectors read them at scrape before) against read
// by pread from the files OpenCgroupFiles keeps open. Alternates the two, checks they parse the
// same files, and prints the median CPU time per pass of each.
// Usage: top_reads_cost <cgroup2 directory> [passes]   (every directory beneath is a "top")
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cgroup/cpu_stats.h"
#include "cgroup/layout.h"
#include "cgroup/open_cgroup_files.h"
#include "cgroup/psi.h"
#include "cpu_time.h"

using stagewatch::bench::CpuMs;
using stagewatch::bench::Median;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <cgroup2 directory> [passes]\n", argv[0]);
    return 2;
  }
  const int passes = argc > 2 ? std::atoi(argv[2]) : 21;
  const std::filesystem::path root = argv[1];
  // Paths relative to a v2 layout rooted at `root`, as the namer gives them.
  std::vector<std::string> tops{"/"};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_directory()) tops.push_back("/" + entry.path().lexically_relative(root).string());
  }
  stagewatch::CgroupLayout layout;
  layout.mode = stagewatch::CgroupMode::kV2;
  layout.key_root = layout.v2_root = root.string();
  stagewatch::OpenCgroupFiles kept;
  std::vector<double> one_shot_ms, kept_ms;
  uint64_t parsed[2] = {0, 0};
  for (int pass = 0; pass < passes; pass++) {
    for (int order = 0; order < 2; order++) {
      const bool use_kept = (pass + order) % 2 == 1;  // A B, then B A
      const double start = CpuMs();
      for (size_t i = 0; i < tops.size(); i++) {
        auto read = [&](const std::string& file) {
          return use_kept ? kept.Read(i, file) : stagewatch::ReadCgroupFile(file);
        };
        for (const char* resource : {"memory", "io", "cpu"}) {
          parsed[use_kept] += stagewatch::ReadPsi(layout, tops[i], resource, read).ok();
        }
        parsed[use_kept] += stagewatch::ReadCpuStats(layout, tops[i], read).ok();
      }
      (use_kept ? kept_ms : one_shot_ms).push_back(CpuMs() - start);
    }
  }
  if (parsed[0] != parsed[1]) {
    std::fprintf(stderr, "one-shot reads parsed %lu files, kept files %lu\n", parsed[0],
                 parsed[1]);
  }
  std::printf("%zu tops, %d passes, %lu files parsed a pass: one-shot %.3f ms, kept files "
              "%.3f ms (%.3f x), %zu files kept\n",
              tops.size(), passes, parsed[1] / passes, Median(one_shot_ms), Median(kept_ms),
              Median(kept_ms) / Median(one_shot_ms), kept.open_files());
  return 0;
}
