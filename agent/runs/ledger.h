// The run ledger: one SQLite file (WAL, crash-safe, schema-versioned) that the launcher and
// the agent both write. Every write is one transaction (or one part of a batch, see BeginBatch);
// a busy timeout lets them write at once.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runs/run_record.h"

struct sqlite3;

namespace stagewatch {

inline constexpr char kDefaultLedgerPath[] = "/var/lib/stagewatch/ledger.db";

struct RunFilter {
  std::string stage;                  // "" for every stage
  std::optional<absl::Time> since;    // runs started at or after
  bool open_only = false;             // runs not yet ended
  int limit = 1000;                   // newest first
};

class Ledger {
 public:
  // Opens the ledger at `path`, creating it (and its directory) when missing, and migrates
  // its schema. Refuses, leaving the file untouched, a file that is not a stagewatch ledger,
  // a corrupt one, or one written by a newer stagewatch.
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(const std::string& path);
  // Opens an existing ledger only to read it (`runs`, `advise`): works for users who may not
  // write the file, and never creates or migrates anything. Writes fail.
  static absl::StatusOr<std::unique_ptr<Ledger>> OpenForReading(const std::string& path);
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
  absl::StatusOr<std::vector<RunRecord>> List(const RunFilter& filter);
  // The newest run, open or ended, whose cgroup is at `cgroup_path`, for the agent's cgroup
  // events.
  absl::StatusOr<std::optional<RunRecord>> FindNewestByCgroup(const std::string& cgroup_path);

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

  static int SchemaVersion();  // the version this build writes

 private:
  Ledger(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  static absl::StatusOr<std::unique_ptr<Ledger>> OpenAs(const std::string& path, bool read_only);
  absl::Status Exec(const std::string& sql);
  absl::Status Migrate();
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
  sqlite3* db_;
  std::atomic<uint64_t> commits_ = 0;
  bool changed_ = false;  // a row changed in the transaction not yet committed
};

}  // namespace stagewatch
