// What a night's page costs: the agent's /pipelines/<id> handler (AnswerPipelinesRequest, as
// the HTTP server calls it) on a real SQLite ledger holding a pipeline run of `runs` runs (10
// stages, each run 10 minutes with a point a second, a tenth of them waiting for CPU) after
// `nights` earlier clean nights of the same runs, so that every run has a baseline and the
// night has its baseline nights. Against /runs/<id> of one of its runs in the same rounds as
// the baseline. Each round asks each page once, in turn, so drift on a shared machine falls on
// both; the median of `rounds` is reported. No root needed.
// Usage: pipeline_page_cost [runs] [nights] [rounds]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "exporters/pages/pipelines_pages.h"
#include "exporters/pages/runs_pages.h"
#include "runs/ledger.h"
#include "runs/pipelines_source.h"
#include "runs/runs_source.h"

namespace {

using namespace stagewatch;

constexpr int kStages = 10;
constexpr int kPoints = 600;  // 10 minutes at the default 1 s sample interval

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Run `i` of night `night`: the stages in turn, a stage's runs one after another, ten
// minutes each; an agent watched it and nothing went wrong.
RunRecord NightRun(int night, int i, absl::Time night_start) {
  RunRecord r;
  RunStart& s = r.start;
  s.id = absl::StrFormat("n%03d-run%03d", night, i);
  s.stage = absl::StrFormat("stage%02d", i % kStages);
  s.pipeline = "nightly";
  s.pipeline_run = absl::StrFormat("night-%03d", night);
  s.command = {"python3", "step.py"};
  s.cgroup_path = "/stagewatch/" + s.stage + "/" + s.id;
  s.start = night_start + absl::Minutes(10 * (i / kStages)) + absl::Seconds(i % kStages);
  RunEnd end;
  end.end = s.start + absl::Minutes(10);
  end.exit_code = 0;
  CgroupFacts& f = end.facts;
  f.oom_kills_kernel = 0;
  f.memory_peak_bytes = 100 << 20;
  f.cpu_seconds = 500;
  f.cpu_throttled_seconds = f.cpu_pressure_seconds = f.memory_pressure_seconds = 0;
  f.io_pressure_seconds = 0;
  r.end = end;
  r.agent_observed = true;
  r.agent.oom_kills_userspace = 0;
  r.agent.reclaim_stall_seconds = 0;
  r.agent.run_queue_wait_seconds = 0;
  r.agent.preemptors_observed = r.agent.anomalies_observed = true;
  return r;
}

bool Fill(Ledger& ledger, int runs, int nights) {
  const absl::Time first = absl::FromUnixSeconds(1'790'000'000);
  if (!ledger.BeginBatch().ok()) return false;
  for (int night = 0; night <= nights; ++night) {
    const absl::Time start = first + absl::Hours(24 * night);
    for (int i = 0; i < runs; ++i) {
      const RunRecord r = NightRun(night, i, start);
      if (!ledger.BeginRun(r.start).ok() || !ledger.EndRun(r.start.id, *r.end).ok() ||
          !ledger.AddAgentFacts(r.start.id, r.agent).ok()) {
        return false;
      }
      if (night < nights) continue;
      std::vector<RunSample> points;
      for (int p = 0; p < kPoints; ++p) {
        const bool waiting = p % 10 == 0;
        points.push_back({.at = r.start.start + absl::Seconds(p),
                          .memory_bytes = uint64_t(50 + p % 50) << 20,
                          .cpu_cores = 0.8,
                          .memory_pressure = 0.0,
                          .cpu_pressure = waiting ? 0.4 : 0.01});
      }
      if (!ledger.AddSamples(r.start.id, points).ok()) return false;
    }
  }
  return ledger.CommitBatch().ok();
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 50;
  const int nights = argc > 2 ? atoi(argv[2]) : 10;
  const int rounds = argc > 3 ? atoi(argv[3]) : 21;
  char tmpl[] = "/tmp/stagewatch-pipeline-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/ledger.db";
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(path);
    if (!ledger.ok() || !Fill(**ledger, runs, nights)) {
      std::fprintf(stderr, "cannot fill the ledger at %s\n", path.c_str());
      return 1;
    }
  }
  LedgerRunsSource runs_source(path, RunsConfig{});
  LedgerPipelinesSource pipelines_source(&runs_source, RunsConfig{}, PipelinesConfig{},
                                         absl::UTCTimeZone());
  const std::string night = absl::StrFormat("night-%03d", nights);
  const exporters::HttpRequest pipeline_page{"/pipelines/" + night, {}};
  const exporters::HttpRequest run_page{absl::StrFormat("/runs/n%03d-run%03d", nights, runs - 1),
                                        {}};
  std::vector<double> pipeline_ms, run_ms;
  size_t pipeline_bytes = 0, run_bytes = 0;
  for (int round = 0; round < rounds + 1; ++round) {  // the first warms the caches
    auto t0 = std::chrono::steady_clock::now();
    const exporters::HttpReply a =
        exporters::AnswerPipelinesRequest(pipelines_source, RunsConfig{}, pipeline_page);
    auto t1 = std::chrono::steady_clock::now();
    const exporters::HttpReply b =
        exporters::AnswerRunsRequest(runs_source, RunsConfig{}, run_page);
    auto t2 = std::chrono::steady_clock::now();
    if (a.status != 200 || b.status != 200) {
      std::fprintf(stderr, "pages answered %u and %u: %s\n", a.status, b.status, a.body.c_str());
      return 1;
    }
    pipeline_bytes = a.body.size();
    run_bytes = b.body.size();
    if (round == 0) continue;
    pipeline_ms.push_back(Seconds(t1 - t0) * 1000);
    run_ms.push_back(Seconds(t2 - t1) * 1000);
  }
  const double p = Median(pipeline_ms), r = Median(run_ms);
  std::printf("ledger: %d runs a night, %d earlier nights (%d runs), %d points a run this night\n",
              runs, nights, runs * (nights + 1), kPoints);
  std::printf("/pipelines/%s   %.2f ms (median of %d), %zu bytes\n", night.c_str(), p, rounds,
              pipeline_bytes);
  std::printf("/runs/<id> (baseline) %.2f ms, %zu bytes\n", r, run_bytes);
  std::printf("ratio: %.2f x the run page\n", p / r);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
