// The `runs:` section of the configuration: where the ledger is, when a run counts as
// degraded, and how the limit advisor recommends (docs/runs.md explains each figure).
#pragma once

#include <string>

namespace stagewatch {

struct AdvisorConfig {
  int min_runs = 3;                  // fewer finished runs with a peak: "not enough runs"
  int max_runs = 30;                 // the newest this many finished runs are used
  double memory_percentile = 0.95;   // of the runs' peaks, for the margin and memory_high
  double memory_margin = 0.15;       // fraction of that percentile added above the largest peak
  double oom_bump = 1.2;             // after an OOM kill at limit L, memory_max >= oom_bump × L
  double memory_high_fraction = 0.9;  // memory_high = max(percentile peak, this × memory_max)
  double cpu_margin = 0.15;          // added to the percentile of the runs' p95 CPU use

  bool operator==(const AdvisorConfig&) const = default;
};

struct RunsConfig {
  std::string ledger_path = "/var/lib/stagewatch/ledger.db";
  // A run that lost at least this share of its wall time to one cause is degraded.
  double degraded_fraction = 0.05;
  // Run-queue wait up to this share of the run's CPU time is normal on a shared host; only the
  // wait beyond it counts as lost.
  double normal_run_queue_wait_fraction = 0.05;
  // A run with more than this share of its memory on NUMA nodes other than where its CPU time
  // ran (its remote share) is degraded: its memory accesses cross the interconnect.
  double remote_memory_threshold = 0.5;
  // The agent exports stagewatch_run_info for this many of each stage's newest ended runs.
  int info_per_stage = 5;
  // The agent samples the cgroup files of runs no launcher started (memory, CPU, PSI) with at
  // most this many file reads a second, spread over the open runs; 0 turns it off.
  int sample_reads_per_second = 100;
  // A run's baseline: the newest this many clean runs of its stage with the same limits (the
  // median of each figure); with fewer than 3 there is none.
  int baseline_runs = 10;
  AdvisorConfig advise;

  bool operator==(const RunsConfig&) const = default;
};

}  // namespace stagewatch
