// What the run list costs over a big ledger: the agent's /runs and /api/v1/runs handler
// (AnswerRunsRequest, as the HTTP server calls it) on a real SQLite ledger of `runs` runs (20
// stages; one run in 1,000 degraded at the default thresholds; one interrupted run older than
// all but the last tenth), against the unfiltered first page of /runs measured in the same
// rounds as the baseline. Each round asks every request once, in turn, so that drift on a
// shared machine falls on all of them; the median of `rounds` is reported.
// Also: the writer's pass that judges a ledger's unjudged rows at open (an upgrade to schema 6).
// No root needed. Usage: runs_filter_cost [runs] [rounds] [keep_dir]: with keep_dir, the ledger
// is made there and left for bench/runs_filter.sh to serve through an agent.
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "exporters/pages/runs_pages.h"
#include "runs/ledger.h"
#include "runs/runs_source.h"
#include "units.h"

namespace {

using namespace stagewatch;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The rows in one transaction, unjudged, as a ledger from before schema 6 holds them after
// its migration: finished runs an agent watched, each 60 s long.
bool Fill(const std::string& path, int runs, int interrupted_at) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO runs (id, stage, command, source, cgroup_path, start_time, "
                     "end_time, closed_by, exit_code, signal, oom_kills_kernel, cpu_seconds, "
                     "cpu_pressure_seconds, agent_observed, oom_kills_userspace, "
                     "reclaim_stall_seconds, run_queue_wait_seconds, preemptors, anomalies) "
                     "VALUES (?, ?, '[\"python3\",\"step.py\"]', 'launcher', ?, ?, ?, "
                     "'launcher', ?, ?, ?, 30, ?, 1, 0, 0, 0, '{}', '[]')",
                     -1, &insert, nullptr);
  const absl::Time t0 = absl::FromUnixSeconds(1'790'000'000);
  for (int i = 0; i < runs; ++i) {
    const bool oom = i == interrupted_at;
    const std::string id = absl::StrFormat("run-%07d", i);
    const std::string stage = absl::StrFormat("stage%02d", i % 20);
    const std::string cgroup = absl::StrCat("/stagewatch/", stage, "/", id);
    const std::string start = FormatRfc3339(t0 + absl::Seconds(i));
    const std::string end = FormatRfc3339(t0 + absl::Seconds(i + 60));
    sqlite3_reset(insert);
    sqlite3_bind_text(insert, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 2, stage.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 3, cgroup.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 4, start.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 5, end.c_str(), -1, SQLITE_TRANSIENT);
    if (oom) {
      sqlite3_bind_null(insert, 6);
      sqlite3_bind_int(insert, 7, 9);
    } else {
      sqlite3_bind_int(insert, 6, 0);
      sqlite3_bind_null(insert, 7);
    }
    sqlite3_bind_int(insert, 8, oom ? 1 : 0);
    sqlite3_bind_double(insert, 9, i % 1000 == 7 ? 4.2 : 0.3);  // 7% of 60 s: degraded
    if (sqlite3_step(insert) != SQLITE_DONE) {
      std::fprintf(stderr, "insert: %s\n", sqlite3_errmsg(db));
      return false;
    }
  }
  sqlite3_finalize(insert);
  const bool ok = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

struct Request {
  std::string label;
  LedgerRunsSource* source;
  exporters::HttpRequest request;
  std::vector<double> ms;
  exporters::HttpReply last;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 1'000'000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 21;
  char tmpl[] = "/tmp/stagewatch-bench-filter-XXXXXX";
  const bool keep = argc > 3;
  const std::string dir = keep ? argv[3] : mkdtemp(tmpl);
  const std::string path = dir + "/ledger.db";
  const int interrupted_at = runs / 10;  // 90% of the runs are newer
  const std::string old_id = absl::StrFormat("run-%07d", interrupted_at);

  auto t = std::chrono::steady_clock::now();
  if (!Ledger::Open(path).ok() || !Fill(path, runs, interrupted_at)) return 1;
  std::printf("ledger of %d runs filled in %.1f s\n", runs,
              Seconds(std::chrono::steady_clock::now() - t));
  t = std::chrono::steady_clock::now();
  if (absl::StatusOr<std::unique_ptr<Ledger>> writer = Ledger::Open(path); !writer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(writer.status().message()).c_str());
    return 1;
  }
  std::printf("a writer's open judged the %d unjudged runs in %.1f s (%.1f us a run); "
              "file %.0f MB\n",
              runs, Seconds(std::chrono::steady_clock::now() - t),
              1e6 * Seconds(std::chrono::steady_clock::now() - t) / runs,
              std::filesystem::file_size(path) / 1e6);

  LedgerRunsSource same(path, RunsConfig{});  // the writer's thresholds, as the agent's pages
  RunsConfig other_config;
  other_config.degraded_fraction = 0.1;  // a reader whose thresholds no writer used
  LedgerRunsSource other(path, other_config);
  const std::string middle = absl::StrFormat("run-%07d", runs / 2);
  std::vector<Request> requests = {
      {"/runs (baseline: the newest 100)", &same, {"/runs", {}}},
      {"/runs?verdict=interrupted", &same, {"/runs", {{"verdict", "interrupted"}}}},
      {"/api/v1/runs?verdict=interrupted", &same, {"/api/v1/runs", {{"verdict", "interrupted"}}}},
      {"/runs?verdict=degraded", &same, {"/runs", {{"verdict", "degraded"}}}},
      {"/runs?stage=stage07&verdict=degraded", &same,
       {"/runs", {{"stage", "stage07"}, {"verdict", "degraded"}}}},
      {"/runs?before=<the middle run>", &same, {"/runs", {{"before", middle}}}},
      {"other thresholds: /runs?verdict=interrupted", &other,
       {"/runs", {{"verdict", "interrupted"}}}},
      {"other thresholds: /runs?verdict=clean", &other, {"/runs", {{"verdict", "clean"}}}},
  };
  for (Request& r : requests) r.last = exporters::AnswerRunsRequest(*r.source, RunsConfig{},
                                                                     r.request);  // warm
  for (int round = 0; round < rounds; ++round) {
    for (Request& r : requests) {
      const auto start = std::chrono::steady_clock::now();
      r.last = exporters::AnswerRunsRequest(*r.source, RunsConfig{}, r.request);
      r.ms.push_back(1000 * Seconds(std::chrono::steady_clock::now() - start));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double base = median(requests[0].ms);
  std::printf("%-46s %10s %11s %6s %9s\n", "request", "median ms", "range", "x base", "bytes");
  for (const Request& r : requests) {
    const auto [lo, hi] = std::minmax_element(r.ms.begin(), r.ms.end());
    std::printf("%-46s %10.2f %5.2f-%-5.2f %6.2f %9zu\n", r.label.c_str(), median(r.ms), *lo, *hi,
                median(r.ms) / base, r.last.body.size());
  }
  // The worst case: a reader whose thresholds no writer used, asking for a verdict that they
  // change and that no run has under them, judges every run itself. Once, not per round.
  LedgerRunsSource worst(path, other_config);
  exporters::AnswerRunsRequest(worst, RunsConfig{}, {"/runs", {{"limit", "1"}}});  // opened
  const auto start = std::chrono::steady_clock::now();
  const exporters::HttpReply none =
      exporters::AnswerRunsRequest(worst, RunsConfig{}, {"/runs", {{"verdict", "degraded"}}});
  const double worst_ms = 1000 * Seconds(std::chrono::steady_clock::now() - start);
  std::printf("%-46s %10.2f %11s %6.0f %9zu (once; every run judged)\n",
              "other thresholds: /runs?verdict=degraded", worst_ms, "", worst_ms / base,
              none.body.size());
  const bool found = requests[1].last.body.find("/runs/" + old_id) != std::string::npos &&
                     requests[2].last.body.find("\"" + old_id + "\"") != std::string::npos;
  std::printf("the interrupted run %s (%d runs are newer): %s\n", old_id.c_str(),
              runs - 1 - interrupted_at, found ? "found" : "NOT FOUND");
  if (!keep) std::filesystem::remove_all(dir);
  return found ? 0 : 1;
}
