// Where the agent's memory goes while cgroups are made and removed, in one process and without
// the kernel: the run watcher on a real SQLite ledger, the id → path cache and the namer get
// the mkdir and rmdir events the lifecycle probe would deliver for `churn` discovered runs (50
// stages, made and removed 200 at a time, as bench/cgroup_scale.sh does), and every `every`
// runs it prints the heap in use (mallinfo2), the heap the process holds (arenas), SQLite's own
// allocations, what the watcher holds by run (RunWatcher::held()), what the path cache and
// the namer hold of removed cgroups, and the CPU time so far. Then the churn stops: once
// removed_kept_for has passed (a clock of its own) and two scrapes' collections, a last point
// shows what is left. No root needed.
// Usage: run_churn_memory [churn] [every]
#include <malloc.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cgroup/cgroup_namer.h"
#include "cgroup_event_for.h"
#include "cgroup/path_cache.h"
#include "runs/ledger.h"
#include "runs/run_watcher.h"
#include "stages/stage_resolver.h"

namespace {

using namespace stagewatch;

cgroup_event Event(int kind, uint64_t id, const std::string& path) {
  return testing::CgroupEventFor(kind, id, path);
}

// Heap in use and heap held from the OS, over every arena, in KiB.
// `commits`: ledger transactions committed so far, each an fsync of the -wal file.
void PrintPoint(int made, const RunWatcher& watcher, const CgroupPathCache& paths,
                CgroupNamer& namer, uint64_t commits, double seconds) {
  const struct mallinfo2 m = mallinfo2();
  const RunWatcher::Held held = watcher.held();
  const CgroupPathCacheHeld removed = paths.held();
  const CgroupNamer::Held named = namer.held();
  std::printf("runs=%6d heap_in_use=%7zu KiB heap_held=%7zu KiB mmapped=%6zu KiB "
              "sqlite=%6lld KiB open_runs=%zu cgroups=%zu published=%zu removed=%zu/%zu "
              "dead=%zu/%zu trims=%llu commits=%llu %.1f s CPU\n",
              made, m.uordblks / 1024, (m.arena + m.hblkhd) / 1024, m.hblkhd / 1024,
              static_cast<long long>(sqlite3_memory_used() / 1024), held.open_runs, held.cgroups,
              held.published, removed.removed, removed.index_capacity, named.dead,
              named.remembered_capacity, static_cast<unsigned long long>(held.trims),
              static_cast<unsigned long long>(commits), seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int churn = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int every = argc > 2 ? std::atoi(argv[2]) : 2000;
  char tmpl[] = "/tmp/stagewatch-churn-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  StageResolver stages({}, DiscoveryConfig{.max_stages = 64});
  absl::Time clock = absl::Now();
  CgroupPathCacheOptions options;
  options.now = [&clock] { return clock; };
  CgroupPathCache paths(dir, options);
  paths.UseEvents([] {});
  CgroupNamer namer(&paths, &stages);
  auto ledger = Ledger::Open(dir + "/ledger.db");
  if (!ledger.ok()) {
    std::fprintf(stderr, "ledger: %s\n", ledger.status().ToString().c_str());
    return 1;
  }
  const Ledger* counted = ledger->get();
  auto watcher = RunWatcher::Start(*std::move(ledger), &stages,
                                   {.key_root = dir, .oom_observed = true}, {});
  if (!watcher.ok()) {
    std::fprintf(stderr, "watcher: %s\n", watcher.status().ToString().c_str());
    return 1;
  }
  RunWatcher& w = **watcher;
  uint64_t next_id = 1000;
  std::vector<std::string> tops = {"/stagewatch"};
  for (int s = 0; s < 50; s++) tops.push_back("/stagewatch/stage_" + std::to_string(s));
  for (const std::string& p : tops) {
    const cgroup_event e = Event(CGROUP_EVENT_MKDIR, next_id++, p);
    w.OnCgroupEvent(e);
    paths.OnMkdir(e.cgroup_id, p);
  }
  w.Flush();
  namer.BeginCollection();
  // CPU time of the process (the watcher's thread included), steadier than wall time here.
  auto seconds = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  const double start = seconds();
  const uint64_t commits_before = counted->commits();
  namer.Refresh();
  PrintPoint(0, w, paths, namer, 0, 0);
  constexpr int kBatch = 200;
  for (int made = 0; made < churn; made += kBatch) {
    std::vector<cgroup_event> batch;
    for (int i = 0; i < kBatch; i++) {
      const std::string path = "/stagewatch/stage_" + std::to_string((made + i) % 50) +
                               "/churn_" + std::to_string(made + i);
      batch.push_back(Event(CGROUP_EVENT_MKDIR, next_id++, path));
      w.OnCgroupEvent(batch.back());
      paths.OnMkdir(batch.back().cgroup_id, path);
    }
    for (const cgroup_event& made_event : batch) {
      const cgroup_event e = Event(CGROUP_EVENT_RMDIR, made_event.cgroup_id, made_event.path);
      w.OnCgroupEvent(e);
      paths.OnRmdir(e.cgroup_id, e.path);
    }
    w.Flush();
    clock += absl::Milliseconds(300);  // the pace of bench/cgroup_scale.sh's batches
    namer.Refresh();                   // the sampler's, every second or so
    namer.BeginCollection();
    if ((made + kBatch) % every == 0) {
      PrintPoint(made + kBatch, w, paths, namer, counted->commits() - commits_before,
                 seconds() - start);
    }
  }
  // The churn has stopped: past removed_kept_for, two scrapes later, and a quiet tick of the
  // watcher's (which trims the heap).
  clock += options.removed_kept_for;
  namer.Refresh();
  for (uint64_t i = 0; i < CgroupNamer::kKeptCollections; i++) namer.BeginCollection();
  absl::SleepFor(absl::Seconds(2.5));
  PrintPoint(churn, w, paths, namer, counted->commits() - commits_before, seconds() - start);
  watcher->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
