#include "runs/ledger_schema.h"

namespace stagewatch {

// Never edit a migration that has shipped: add a new one. Times are RFC 3339 text in UTC with
// milliseconds (fixed width, so they sort); a NULL fact was not observed.
const std::vector<std::string_view>& LedgerMigrations() {
  static const std::vector<std::string_view> kMigrations = {
      // 1: one row per run.
      R"sql(
CREATE TABLE runs (
  id TEXT PRIMARY KEY NOT NULL,
  stage TEXT NOT NULL,
  pipeline TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '[]',
  source TEXT NOT NULL CHECK (source IN ('launcher', 'discovered')),
  cgroup_path TEXT NOT NULL DEFAULT '',
  launcher_pid INTEGER,
  start_time TEXT NOT NULL,
  end_time TEXT,
  closed_by TEXT CHECK (closed_by IN ('launcher', 'agent')),
  exit_code INTEGER,
  signal INTEGER,
  signal_requested INTEGER NOT NULL DEFAULT 0,
  limit_memory_max_bytes INTEGER,
  limit_memory_high_bytes INTEGER,
  limit_cpu_max_cores REAL,
  limit_cpu_weight INTEGER,
  memory_limit_bytes INTEGER,
  memory_peak_bytes INTEGER,
  memory_failcnt INTEGER,
  memory_mean_bytes INTEGER,
  memory_p95_bytes INTEGER,
  near_limit_seconds REAL,
  oom_kills_kernel INTEGER,
  cpu_seconds REAL,
  cpu_throttled_seconds REAL,
  cpu_p95_cores REAL,
  memory_pressure_seconds REAL,
  cpu_pressure_seconds REAL,
  agent_observed INTEGER NOT NULL DEFAULT 0,
  oom_kills_userspace INTEGER,
  oom_victims TEXT NOT NULL DEFAULT '[]',
  reclaim_stall_seconds REAL,
  run_queue_wait_seconds REAL,
  preemptors TEXT,
  anomalies TEXT
);
CREATE INDEX runs_by_start ON runs (start_time);
CREATE INDEX runs_by_stage_start ON runs (stage, start_time);
CREATE INDEX runs_by_cgroup ON runs (cgroup_path) WHERE end_time IS NULL;
)sql",
      // 2: a bounded time series per run (Ledger::kMaxSamplesPerRun points), for the run page.
      // Time in milliseconds since the epoch; pressure is the share of the interval stalled.
      R"sql(
CREATE TABLE run_samples (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  at_ms INTEGER NOT NULL,
  memory_bytes INTEGER,
  memory_limit_bytes INTEGER,
  cpu_cores REAL,
  memory_pressure REAL,
  cpu_pressure REAL
);
CREATE INDEX run_samples_by_run ON run_samples (run_id, at_ms);
)sql",
      // 3: the agent watched the run's cgroup go and added its end facts (the launcher waits
      // for them before it prints the verdict); the wall time CPU throttling held the run back
      // (cpu_throttled_seconds sums the run's CPUs).
      R"sql(
ALTER TABLE runs ADD COLUMN agent_saw_end INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cpu_throttled_wall_seconds REAL;
)sql",
      // 4: the newest run of a cgroup path, open or ended, by index: the agent looks it up at
      // every cgroup made beneath a stage's top, and a scan of every row made that grow with
      // the ledger (quadratic over a churn of short cgroups).
      R"sql(
CREATE INDEX runs_by_cgroup_start ON runs (cgroup_path, start_time);
)sql",
      // 5: of run_queue_wait_seconds, the part the run's CPU group was throttled (the verdict's
      // run-queue reason leaves it out: throttling is a cause of its own).
      R"sql(
ALTER TABLE runs ADD COLUMN run_queue_throttled_seconds REAL;
)sql",
      // 6: the run's verdict as its last writer judged it, and with what (VerdictJudgedWith),
      // so that lists filter by verdict by index over every run. NULL: not judged yet (rows
      // from before; a writer judges them when it opens the ledger). By index: a judgement's
      // runs of one verdict, newest first (runs_by_verdict), and all of them, for a reader that
      // judges with other thresholds and so judges them itself (runs_by_judged_start).
      R"sql(
ALTER TABLE runs ADD COLUMN verdict TEXT
  CHECK (verdict IN ('running', 'clean', 'unobserved', 'degraded', 'interrupted'));
ALTER TABLE runs ADD COLUMN verdict_judged_with TEXT;
CREATE INDEX runs_by_verdict ON runs (verdict_judged_with, verdict, start_time, id);
CREATE INDEX runs_by_judged_start ON runs (verdict_judged_with, start_time, id);
)sql",
      // 7: pipeline runs (a night of a pipeline: the runs sharing pipeline and pipeline_run),
      // what the run's command computed (results: a JSON object, name → number), its I/O
      // pressure, who started it where (user, uid, host), and a stage's clean runs newest
      // first by index, for its baseline.
      R"sql(
ALTER TABLE runs ADD COLUMN pipeline_run TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN results TEXT;
ALTER TABLE runs ADD COLUMN io_pressure_seconds REAL;
ALTER TABLE runs ADD COLUMN user TEXT;
ALTER TABLE runs ADD COLUMN uid INTEGER;
ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_stage_verdict ON runs (stage, verdict_judged_with, verdict, start_time);
CREATE INDEX runs_by_pipeline_run ON runs (pipeline, pipeline_run, start_time)
  WHERE pipeline_run != '';
)sql",
      // 8: the cpuset a launched run asked for (--cpuset-cpus, --cpuset-mems), as canonical
      // lists ("0-1,4"); NULL when it asked for none, as for every run before.
      R"sql(
ALTER TABLE runs ADD COLUMN limit_cpuset_cpus TEXT;
ALTER TABLE runs ADD COLUMN limit_cpuset_mems TEXT;
)sql",
      // 9: where a run ran (runs/run_placement_json.h): its memory by NUMA node at its peak,
      // from its cgroup (memory_by_node), and the agent's migrations and CPU time by node
      // (placement). NULL when not observed, as for every run before.
      R"sql(
ALTER TABLE runs ADD COLUMN memory_by_node TEXT;
ALTER TABLE runs ADD COLUMN placement TEXT;
)sql",
  };
  return kMigrations;
}

}  // namespace stagewatch
