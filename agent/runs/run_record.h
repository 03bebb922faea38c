// A run as the ledger keeps it: what the launcher knows (command, limits, start, end, exit),
// what cgroupfs told at its end, and what only the agent sees (BPF facts). A fact that nobody
// observed is nullopt, never 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "cgroup/numa_stat.h"

namespace stagewatch {

enum class RunSource { kLauncher, kDiscovered };
std::string_view RunSourceName(RunSource source);  // "launcher" | "discovered"

// The limits a run was started with: for a launcher run what was asked for (not what the kernel
// rounded to); for a discovered run what its cgroup files held (the last reading at its end).
struct RunLimits {
  std::optional<uint64_t> memory_max_bytes;
  std::optional<uint64_t> memory_high_bytes;
  std::optional<double> cpu_max_cores;
  std::optional<uint32_t> cpu_weight;
  // --cpuset-cpus and --cpuset-mems as canonical lists ("0-1,4"; runs/cpuset_request.h). A
  // discovered run's are not read: none.
  std::optional<std::string> cpuset_cpus;
  std::optional<std::string> cpuset_mems;
  bool operator==(const RunLimits&) const = default;
};

// Known when the run starts.
struct RunStart {
  std::string id;
  std::string stage;
  std::string pipeline;               // "" when none
  std::string pipeline_run;           // the pipeline's run (a night) it belongs to; "" when none
  std::vector<std::string> command;   // argv; empty for a discovered run
  RunSource source = RunSource::kLauncher;
  std::string cgroup_path;            // within the hierarchy the agent keys on
  std::optional<int64_t> launcher_pid;
  absl::Time start;
  RunLimits limits;
  std::optional<int64_t> uid;  // who started it: the launcher's user; none for a discovered run
  std::string user;            // uid's login name; "" when it has none
  std::string host;            // the host it ran on
};

// Read from the run's cgroup files just before it is removed (by the launcher, or by the agent
// when it closes a run whose launcher died).
struct CgroupFacts {
  std::optional<uint64_t> memory_limit_bytes;  // as the kernel holds it
  std::optional<uint64_t> memory_peak_bytes;   // v1 max_usage_in_bytes, v2 memory.peak
  std::optional<uint64_t> memory_failcnt;      // v1 failcnt, v2 memory.events max
  std::optional<uint64_t> memory_mean_bytes;   // sampled
  std::optional<uint64_t> memory_p95_bytes;    // sampled
  std::optional<double> near_limit_seconds;    // sampled
  std::optional<uint64_t> oom_kills_kernel;    // v1 memory.oom_control, v2 memory.events
  std::optional<double> cpu_seconds;
  std::optional<double> cpu_throttled_seconds;       // summed over the run's CPUs, as cpu.stat
  std::optional<double> cpu_throttled_wall_seconds;  // wall time held back: at most a period per throttling
  std::optional<double> cpu_p95_cores;           // sampled CPU use per interval
  std::optional<double> memory_pressure_seconds;  // PSI "some" total
  std::optional<double> cpu_pressure_seconds;     // PSI "some" total
  std::optional<double> io_pressure_seconds;      // PSI "some" total
  // Its memory by NUMA node (anon and file) at the reading where it held the most: at the end
  // its tasks are gone and their anon memory freed, so the end alone would show page cache.
  // Empty when not read (no memory.numa_stat).
  NumaMemory memory_by_node;
  // A discovered run's limits as its cgroup files held them at the last reading: the ledger
  // stores them as the run's limits (RunStart::limits) and does not read them back here.
  std::optional<RunLimits> limits;
};

struct OomVictim {
  int64_t pid = 0;
  std::string comm;
  std::string kind;  // "kernel" | "userspace"
  std::string killer;  // the user-space killer's comm; "" for the kernel
};

struct RunAnomaly {
  std::string name;  // the detector, e.g. "memory_climb"
  absl::Time at;
  std::string detail;
};

// What only the agent sees. Added while the run lives, merged into what is there: counts and
// seconds add up, victims and anomalies append, preemptor counts add per stage.
struct AgentFacts {
  std::optional<uint64_t> oom_kills_userspace;
  std::vector<OomVictim> oom_victims;
  std::optional<double> reclaim_stall_seconds;
  std::optional<double> run_queue_wait_seconds;  // summed over its tasks, as schedstat's run delay
  // Of run_queue_wait_seconds, the part its CPU group was throttled (its CFS bandwidth spent):
  // the sched probe tells it apart where the kernel keeps cfs_rq throttled times (Linux 6.6).
  std::optional<double> run_queue_throttled_seconds;
  std::map<std::string, uint64_t> preemptors;  // preempting stage → times; empty map observed
  bool preemptors_observed = false;
  std::vector<RunAnomaly> anomalies;
  bool anomalies_observed = false;
  bool saw_end = false;  // the agent watched the run's cgroup go and added these at its end
  // Its tasks' CPU migrations (the placement probe): within a NUMA node, and across nodes.
  std::optional<uint64_t> node_migrations;
  std::optional<uint64_t> cross_node_migrations;
  // Its on-CPU seconds by the NUMA node of the CPU they ran on (node id → seconds); empty when
  // not observed (the sched or placement signal is off).
  std::map<int, double> cpu_seconds_by_node;
};

enum class RunCloser { kLauncher, kAgent };

// Known when the run ends.
struct RunEnd {
  absl::Time end;
  std::optional<int> exit_code;  // none when a signal ended it, or for a discovered run
  std::optional<int> signal;     // the signal that ended the command
  bool signal_requested = false;  // that signal was sent through the launcher (SIGINT, SIGTERM)
  RunCloser closed_by = RunCloser::kLauncher;
  CgroupFacts facts;
};

// One point of a run's time series (the run page's charts). A figure not read is nullopt.
struct RunSample {
  absl::Time at;
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> memory_limit_bytes;  // none when unlimited
  std::optional<double> cpu_cores;             // CPU time per wall second since the last point
  std::optional<double> memory_pressure;       // share of the interval stalled ("some"), 0..1
  std::optional<double> cpu_pressure;
};

struct RunRecord {
  RunStart start;
  std::optional<RunEnd> end;  // nullopt while the run is open
  AgentFacts agent;
  bool agent_observed = false;  // an agent added facts to this run
  // What the run's command computed (an accuracy, a loss, a row count): name → number.
  std::map<std::string, double> results;

  std::optional<absl::Duration> Wall() const {
    if (!end) return std::nullopt;
    return end->end - start.start;
  }
};

}  // namespace stagewatch
