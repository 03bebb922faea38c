// A run's row in the ledger: its columns as read back, and the JSON text of the agent's facts
// as written. Shared by the ledger's source files (ledger*.cc) and by nothing else.
#pragma once

#include <SQLiteCpp/Statement.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "runs/run_record.h"

namespace stagewatch::ledger_row {

// Every column of a run's row, in the order DecodeRow reads them.
inline constexpr char kColumns[] =
    "id, stage, pipeline, command, source, cgroup_path, launcher_pid, start_time, end_time, "
    "closed_by, exit_code, signal, signal_requested, limit_memory_max_bytes, "
    "limit_memory_high_bytes, limit_cpu_max_cores, limit_cpu_weight, memory_limit_bytes, "
    "memory_peak_bytes, memory_failcnt, memory_mean_bytes, memory_p95_bytes, near_limit_seconds, "
    "oom_kills_kernel, cpu_seconds, cpu_throttled_seconds, cpu_p95_cores, "
    "memory_pressure_seconds, cpu_pressure_seconds, agent_observed, oom_kills_userspace, "
    "oom_victims, reclaim_stall_seconds, run_queue_wait_seconds, preemptors, anomalies, "
    "agent_saw_end, cpu_throttled_wall_seconds, run_queue_throttled_seconds, pipeline_run, "
    "results, io_pressure_seconds, user, uid, host, limit_cpuset_cpus, limit_cpuset_mems, "
    "memory_by_node, placement";
inline constexpr int kStartTimeColumn = 7;  // in kColumns

// The row the statement is on, selected with kColumns first.
RunRecord DecodeRow(const SQLite::Statement& s);

// The text columns oom_victims and anomalies.
std::string VictimsText(const std::vector<OomVictim>& victims);
std::string AnomaliesText(const std::vector<RunAnomaly>& anomalies);
std::string ResultsText(const std::map<std::string, double>& results);

// A time column's text, or `fallback` when it is not a time (someone edited the file by hand).
absl::Time TimeOr(const std::string& text, absl::Time fallback);

}  // namespace stagewatch::ledger_row
