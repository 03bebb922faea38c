// Loads only the memory probe (page faults, reclaim stalls) until SIGINT or SIGTERM, for
// bench/page_fault_storm.sh to measure its overhead without the rest of the agent.
//
//   load_memory_probe [--faults=auto|perf|exceptions] [--print]
//
// Prints "ready" once attached; with --print, dumps the per-cgroup counters on exit.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cgroup/layout.h"
#include "probes/features.h"
#include "signals/memory/memory_probe.h"

namespace {

volatile sig_atomic_t stop = 0;
void OnSignal(int) { stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  using namespace stagewatch;
  FaultSource source = FaultSource::kAuto;
  bool print = false;
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--faults=perf") {
      source = FaultSource::kPerfEvents;
    } else if (arg == "--faults=exceptions") {
      source = FaultSource::kExceptionTracepoints;
    } else if (arg == "--print") {
      print = true;
    } else if (arg != "--faults=auto") {
      fprintf(stderr, "usage: %s [--faults=auto|perf|exceptions] [--print]\n", argv[0]);
      return 2;
    }
  }
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  if (!layout.ok()) {
    fprintf(stderr, "%s\n", layout.status().ToString().c_str());
    return 1;
  }
  auto probe = MemoryProbe::Start(
      {.key = layout->key, .features = ProbeKernelFeatures(), .fault_source = source});
  if (!probe.ok()) {
    fprintf(stderr, "%s\n", probe.status().ToString().c_str());
    return 1;
  }
  bool faults_attached = false;
  for (const ProbeStatus& s : (*probe)->statuses()) {
    fprintf(stderr, "probe %s: %s %s%s%s\n", s.name.c_str(), s.attach_type.c_str(),
            s.attached ? "attached" : "NOT attached", s.error.empty() ? "" : ": ",
            s.error.c_str());
    if (s.name == "page_faults") faults_attached = s.attached;
  }
  if (!faults_attached) return 1;

  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  printf("ready\n");
  fflush(stdout);
  while (!stop) pause();

  if (print) {
    for (const MemoryCgroupCounters& c : (*probe)->Read()) {
      printf("cgroup %llu minor %llu major %llu reclaim_stalls %llu reclaim_ns %llu\n",
             (unsigned long long)c.cgroup_id, (unsigned long long)c.minor_faults,
             (unsigned long long)c.major_faults, (unsigned long long)c.reclaim_stalls,
             (unsigned long long)c.reclaim_stall_ns.sum);
    }
  }
  return 0;
}
