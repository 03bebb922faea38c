// What a run's baseline costs: the lookup of its stage's clean runs with the same limits and
// the split of its excess (CompareRunWithBaseline, as `runs show`, the run page, the launcher's
// closing line and the agent at each run's end call it) on a real SQLite ledger holding
// `runs` past runs of the stage (and as many of another), against Ledger::Get of one run
// measured in the same rounds. Twice: with the ledger's own thresholds (the stored verdicts
// answer, by index) and with a reader's other thresholds (the runs are judged as they are
// read, at most Ledger::kBaselineScan of them). The median of `rounds` is reported.
// No root needed. Usage: baseline_cost [runs] [rounds]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "runs/baseline_comparison.h"
#include "runs/ledger.h"

namespace {

using namespace stagewatch;

double MedianMs(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// A finished run an agent watched: `wall` seconds, all of it on a CPU but 1 s of waiting.
RunRecord Finished(const std::string& id, const std::string& stage, absl::Time start, double wall) {
  RunRecord r;
  r.start.id = id;
  r.start.stage = stage;
  r.start.command = {"python3", "validate.py"};
  r.start.cgroup_path = "/stagewatch/" + stage + "/" + id;
  r.start.start = start;
  RunEnd end;
  end.end = start + absl::Seconds(wall);
  end.exit_code = 0;
  CgroupFacts& f = end.facts;
  f.oom_kills_kernel = 0;
  f.memory_peak_bytes = 300u << 20;
  f.cpu_seconds = wall - 1;
  f.cpu_throttled_seconds = 0;
  f.cpu_throttled_wall_seconds = 0;
  f.cpu_pressure_seconds = 1;
  f.memory_pressure_seconds = 0;
  f.io_pressure_seconds = 0;
  r.end = end;
  r.agent_observed = true;
  r.agent.oom_kills_userspace = 0;
  r.agent.reclaim_stall_seconds = 0;
  r.agent.run_queue_wait_seconds = 1;
  r.agent.preemptors_observed = true;
  r.agent.anomalies_observed = true;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 10'000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 101;
  char tmpl[] = "/tmp/stagewatch-bench-baseline-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/ledger.db";
  absl::StatusOr<std::unique_ptr<Ledger>> writer = Ledger::Open(path);
  if (!writer.ok()) return 1;
  const absl::Time t0 = absl::FromUnixSeconds(1'790'000'000);
  if (!(*writer)->BeginBatch().ok()) return 1;
  for (int i = 0; i < runs; ++i) {
    for (const char* stage : {"validate", "train"}) {
      const RunRecord r = Finished(absl::StrFormat("%s-%06d", stage, i), stage,
                                   t0 + absl::Seconds(100 * i), 40 + i % 7);
      if (!(*writer)->BeginRun(r.start).ok() || !(*writer)->EndRun(r.start.id, *r.end).ok() ||
          !(*writer)->AddAgentFacts(r.start.id, r.agent).ok()) {
        return 1;
      }
    }
  }
  if (!(*writer)->CommitBatch().ok()) return 1;
  RunRecord now = Finished("now", "validate", t0 + absl::Seconds(100 * runs), 78);
  now.agent.run_queue_wait_seconds = 25;
  now.agent.preemptors = {{"train", 12400}};

  RunsConfig other;
  other.degraded_fraction = 0.1;
  absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(path, other);
  if (!reader.ok()) return 1;
  struct Case {
    const char* label;
    std::function<bool()> call;
    std::vector<double> ms;
  };
  const RunsConfig same;
  std::vector<Case> cases = {
      {"Ledger::Get of one run (baseline)",
       [&] { return (*writer)->Get("validate-000042").ok(); }},
      {"baseline + split, the ledger's thresholds",
       [&] {
         absl::StatusOr<BaselineComparison> c = CompareRunWithBaseline(**writer, now, same);
         return c.ok() && c->slowdown.has_value();
       }},
      {"baseline + split, a reader's other thresholds",
       [&] {
         absl::StatusOr<BaselineComparison> c = CompareRunWithBaseline(**reader, now, other);
         return c.ok() && c->slowdown.has_value();
       }},
  };
  for (int round = 0; round < rounds; ++round) {
    for (Case& c : cases) {
      const auto t = std::chrono::steady_clock::now();
      if (!c.call()) {
        std::fprintf(stderr, "%s failed\n", c.label);
        return 1;
      }
      c.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
  }
  const double base = MedianMs(cases[0].ms);
  std::printf("ledger: %d past runs of validate and %d of train (%.1f MB); median of %d rounds\n",
              runs, runs, std::filesystem::file_size(path) / 1e6, rounds);
  for (const Case& c : cases) {
    const double m = MedianMs(c.ms);
    std::printf("%-48s %7.3f ms  (%.1fx the baseline)\n", c.label, m, m / base);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
