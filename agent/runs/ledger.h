// The run ledger: one SQLite file (WAL, crash-safe, schema-versioned) that the launcher and
// the agent both write. Every write is one transaction (or one part of a batch, see BeginBatch);
// a busy timeout lets them write at once.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/runs_config.h"
#include "runs/run_record.h"
#include "runs/verdict.h"

namespace SQLite {
class Database;
class Transaction;
}  // namespace SQLite

namespace stagewatch {

inline constexpr char kDefaultLedgerPath[] = "/var/lib/stagewatch/ledger.db";

// Which runs a list holds: every one that matches, over the whole ledger, a page at a time.
struct RunFilter {
  std::string stage;                  // "" for every stage
  std::string pipeline;               // "" for runs of every pipeline (and of none)
  std::optional<absl::Time> since;    // runs started at or after
  std::optional<absl::Time> until;    // runs started before
  bool open_only = false;             // runs not yet ended
  // Runs of this verdict as JudgeRun gives it with the ledger's thresholds (Open's `judging`).
  std::optional<VerdictKind> verdict;
  std::string before;                 // "": from the newest; else the runs listed after this one
  int limit = 1000;                   // newest first
};

struct RunPage {
  std::vector<RunRecord> runs;  // newest first
  bool more = false;  // more runs match after the last one: the next page is before = its id
};

// A pipeline run: the runs that share a pipeline and a pipeline-run id (a night).
struct PipelineRunSummary {
  std::string pipeline;
  std::string pipeline_run;
  absl::Time first_start;               // of its first run
  std::optional<absl::Time> last_end;   // of its runs that ended; nullopt when none has
  int runs = 0;
  int open_runs = 0;
  // Running while a run is open, else its worst run's (interrupted, degraded, unobserved, clean).
  VerdictKind verdict = VerdictKind::kRunning;
};

struct PipelineRunFilter {
  std::string pipeline;                      // "" for every pipeline
  std::optional<absl::Time> started_before;  // pipeline runs whose first run started before
  // Set: the pipeline runs listed after this one (its pipeline, its id), for the next page.
  std::optional<std::pair<std::string, std::string>> after;
  int limit = 100;  // newest first, by their first run's start
};

struct PipelineRunPage {
  std::vector<PipelineRunSummary> runs;  // newest first
  bool more = false;  // more match after the last one: the next page is after it
};

// Where a run's sampled pressure was above a share: from the point before to this point.
struct PressureSpan {
  absl::Time from, to;
  bool cpu = false;     // its tasks waited for a CPU (PSI cpu "some")
  bool memory = false;  // its tasks stalled on memory (PSI memory "some")
};

class Ledger {
 public:
  // Opens the ledger at `path`, creating it (and its directory) when missing, and migrates
  // its schema. Refuses, leaving the file untouched, a file that is not a stagewatch ledger,
  // a corrupt one, or one written by a newer stagewatch, and a path another user could point
  // elsewhere (LedgerFileToOpen). Every write stores the run's verdict as JudgeRun gives it
  // with `judging`'s thresholds, and opening judges the rows not judged yet (or under other
  // rules, kVerdictRules), so that lists filter by verdict in SQL.
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(const std::string& path,
                                                      const RunsConfig& judging = {});
  // Opens an existing ledger only to read it (`runs`, `advise`): works for users who may not
  // write the file, and never creates or migrates anything. Writes fail. Lists by verdict
  // judge with `judging`: rows stored under other thresholds are judged again as they are read.
  static absl::StatusOr<std::unique_ptr<Ledger>> OpenForReading(const std::string& path,
                                                                const RunsConfig& judging = {});
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  const std::string& path() const { return path_; }

  // AlreadyExists when a run with that id is in the ledger.
  absl::Status BeginRun(const RunStart& start);
  // NotFound for an unknown id, FailedPrecondition for a run that has ended already.
  // A discovered run's end facts with limits also replace its row's limits (the kernel's, as
  // of its last reading), in the same write; a launcher run keeps the limits it was started with.
  absl::Status EndRun(const std::string& id, const RunEnd& end);
  // Merges facts only the agent sees into the run's row (see AgentFacts).
  absl::Status AddAgentFacts(const std::string& id, const AgentFacts& facts);
  // Records what the run's command computed, open or ended: a result of the same name is
  // replaced. NotFound for an unknown id.
  absl::Status AddResults(const std::string& id, const std::map<std::string, double>& results);

  // Appends points to the run's time series, in one transaction. Bounded: when the run holds
  // more than kMaxSamplesPerRun points it is thinned to the first point in each of
  // kMaxSamplesPerRun / 2 equal slices of its time so far (and its last point), so a run of
  // any length keeps at most the bound, evenly spread over the whole run.
  absl::Status AddSamples(const std::string& id, const std::vector<RunSample>& samples);
  // The same for several runs (run id → points), all in one transaction.
  absl::Status AddSamplesOfRuns(const std::map<std::string, std::vector<RunSample>>& samples);
  // The run's points, oldest first; empty for an unknown run or one without any.
  absl::StatusOr<std::vector<RunSample>> Samples(const std::string& id);
  static constexpr int kMaxSamplesPerRun = 4096;

  absl::StatusOr<std::optional<RunRecord>> Get(const std::string& id);
  // The filter's runs, newest first, at most filter.limit of them, and whether more match.
  // NotFound when `before` names no run.
  absl::StatusOr<RunPage> ListPage(const RunFilter& filter);
  absl::StatusOr<std::vector<RunRecord>> List(const RunFilter& filter);  // ListPage's runs
  // The newest run, open or ended, whose cgroup is at `cgroup_path`, for the agent's cgroup
  // events.
  absl::StatusOr<std::optional<RunRecord>> FindNewestByCgroup(const std::string& cgroup_path);

  // The baseline candidates of `run`: up to `n` ended runs of its stage with the same limits,
  // started before it, that the ledger's thresholds judge clean, newest first. Reads at most
  // kBaselineScan runs judged under other thresholds (a reader's own `judging`).
  absl::StatusOr<std::vector<RunRecord>> CleanRunsBefore(const RunStart& run, int n);
  static constexpr int kBaselineScan = 2000;

  // Pipeline runs (ledger_pipelines.cc), by index: the filter's, newest first, a page at a
  // time, each judged with the ledger's thresholds. NotFound when `after` names none.
  absl::StatusOr<PipelineRunPage> ListPipelineRuns(const PipelineRunFilter& filter);
  // One pipeline run's runs, in the order they started; empty when it has none.
  absl::StatusOr<std::vector<RunRecord>> PipelineRunRuns(const std::string& pipeline,
                                                         const std::string& pipeline_run);
  // The pipelines that have a pipeline run of this id (two may share one, e.g. a date).
  absl::StatusOr<std::vector<std::string>> PipelinesWithRun(const std::string& pipeline_run);
  // Where the run's points show CPU or memory pressure above `share` (0..1), oldest first.
  absl::StatusOr<std::vector<PressureSpan>> PressureSpans(const std::string& id, double share);

  // Withdraws an open run that never started, with its points: the launcher records a run
  // before it makes the run's cgroup (so that its death at any moment leaves a row to close),
  // and withdraws it when the cgroup cannot be made. NotFound when no such open run exists.
  absl::Status WithdrawRun(const std::string& id);

  // Until CommitBatch, every write of this connection joins one transaction: one commit (one
  // fsync) for many runs' writes. Each write stays all-or-nothing within it (a savepoint); a
  // crash before CommitBatch loses the batch's writes, never part of one, and other writers
  // (launchers) wait for the write lock until then, as they do for any write.
  absl::Status BeginBatch();
  absl::Status CommitBatch();
  // Transactions committed that changed rows, since the ledger was opened (for tests and
  // benches: each one is an fsync of the -wal file).
  uint64_t commits() const { return commits_.load(); }

  // Whether path() names another file than the one open, or none: the ledger was removed or
  // replaced under this process (one stat).
  bool Replaced() const;
  // When Replaced(), opens path() again in place of the removed file (a writer makes a new
  // ledger when the path is gone) and carries `carry`'s runs over: each run missing from the
  // new file gets its row and points as the removed file holds them, or, when it holds none,
  // a row begun from its start. The removed file is closed without a write. Returns whether it
  // reopened. When the path cannot be opened, every write fails from then on (none goes to
  // the removed file), until a later call opens it. Call outside a batch.
  absl::StatusOr<bool> ReopenIfReplaced(const std::vector<RunStart>& carry = {});

  static int SchemaVersion();  // the version this build writes

 private:
  // The run `id` for a write that changes it (inside its transaction), or NotFound.
  absl::StatusOr<RunRecord> RunToChange(const std::string& id);
  Ledger(std::string path, bool read_only, const RunsConfig& judging);
  static absl::StatusOr<std::unique_ptr<Ledger>> OpenAs(const std::string& path, bool read_only,
                                                        const RunsConfig& judging);
  // Opens path_ into db_ (nullptr when it fails), checking and migrating as Open says.
  absl::Status Connect();
  absl::Status ConnectOrFail();
  absl::Status Exec(const std::string& sql);
  absl::Status Migrate();
  // Judges the rows never judged, or judged under other rules (writers, at open).
  absl::Status JudgeUnjudgedRows();
  // Fails while a reopen failed: no write goes to a removed ledger.
  absl::Status Writable() const { return lost_; }
  // Copies run `start.id` from the removed file `from` into db_ when db_ lacks it.
  absl::Status CarryRun(SQLite::Database& from, const RunStart& start);
  // AddSamples' inserts and thinning, within the caller's transaction.
  absl::Status InsertSamples(const std::string& id, const std::vector<RunSample>& samples);
  struct SampleStatements;  // the insert and the count, prepared once for many runs
  absl::Status InsertSamples(const std::string& id, const std::vector<RunSample>& samples,
                             SampleStatements& statements);
  absl::StatusOr<std::vector<RunRecord>> Query(const std::string& where,
                                               const std::vector<std::string>& args,
                                               const std::string& tail);

  // SQLite's hooks, counting the commits that changed a row.
  static void OnRowChange(void* self, int op, const char* db, const char* table,
                          long long row);  // NOLINT(runtime/int): sqlite3_int64
  static int OnCommit(void* self);
  static void OnRollback(void* self);

  std::string path_;
  const bool read_only_;
  const RunsConfig judging_;
  const std::string judged_with_;  // VerdictJudgedWith(judging_)
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<SQLite::Transaction> batch_;  // between BeginBatch and CommitBatch
  absl::Status lost_;  // why the path could not be reopened, when it could not
  std::atomic<uint64_t> commits_ = 0;
  bool changed_ = false;  // a row changed in the transaction not yet committed
};

}  // namespace stagewatch
