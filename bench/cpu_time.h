// The process's CPU time and a median, for the bench drivers that time passes in one process.
#pragma once

#include <time.h>

#include <algorithm>
#include <vector>

namespace stagewatch::bench {

inline double CpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace stagewatch::bench
