// A run's time series: points added, thinned to Ledger::kMaxSamplesPerRun, and read.
#include "absl/strings/str_format.h"
#include "runs/ledger.h"
#include "runs/ledger_sqlite.h"

namespace stagewatch {

using ledger_sqlite::BindAll;
using ledger_sqlite::OptReal;
using ledger_sqlite::OptUint;
using ledger_sqlite::SqlError;
using ledger_sqlite::WriteTransaction;

absl::Status Ledger::AddSamples(const std::string& id, const std::vector<RunSample>& samples) {
  if (samples.empty()) return absl::OkStatus();
  if (absl::Status s = Writable(); !s.ok()) return s;
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  if (absl::Status s = InsertSamples(id, samples); !s.ok()) return s;
  return tx.Commit();
}

struct Ledger::SampleStatements {
  explicit SampleStatements(SQLite::Database& db)
      : insert(db,
               "INSERT INTO run_samples (run_id, at_ms, memory_bytes, memory_limit_bytes, "
               "cpu_cores, memory_pressure, cpu_pressure) VALUES (?, ?, ?, ?, ?, ?, ?)"),
        count(db, "SELECT count(*) FROM run_samples WHERE run_id = ?") {}
  SQLite::Statement insert, count;
};

absl::Status Ledger::AddSamplesOfRuns(
    const std::map<std::string, std::vector<RunSample>>& samples) {
  if (samples.empty()) return absl::OkStatus();
  if (absl::Status s = Writable(); !s.ok()) return s;
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  // Prepared once for every run of the write (the discovered runs' points come all at once).
  std::optional<SampleStatements> statements;
  for (const auto& [id, points] : samples) {
    try {
      if (!statements) statements.emplace(*db_);
    } catch (const SQLite::Exception& e) {
      return SqlError(absl::StrFormat("cannot add samples to run \"%s\"", id), e);
    }
    if (absl::Status s = InsertSamples(id, points, *statements); !s.ok()) return s;
  }
  return tx.Commit();
}

absl::Status Ledger::InsertSamples(const std::string& id, const std::vector<RunSample>& samples) {
  try {
    SampleStatements statements(*db_);
    return InsertSamples(id, samples, statements);
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot add samples to run \"%s\"", id), e);
  }
}

absl::Status Ledger::InsertSamples(const std::string& id, const std::vector<RunSample>& samples,
                                   SampleStatements& statements) {
  try {
    for (const RunSample& p : samples) {
      SQLite::Statement& s = statements.insert;
      s.reset();
      s.clearBindings();
      BindAll(s, id, absl::ToUnixMillis(p.at), p.memory_bytes, p.memory_limit_bytes, p.cpu_cores,
              p.memory_pressure, p.cpu_pressure);
      s.exec();
    }
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot add samples to run \"%s\"", id), e);
  }
  // A count that cannot be read leaves the points unthinned until the run's next points.
  int64_t count = 0;
  try {
    SQLite::Statement& n = statements.count;
    n.reset();
    n.clearBindings();
    BindAll(n, id);
    if (n.executeStep()) count = n.getColumn(0).getInt64();
  } catch (const SQLite::Exception&) {
  }
  if (count <= kMaxSamplesPerRun) return absl::OkStatus();
  // Thin to the first point in each of kMaxSamplesPerRun / 2 equal slices of the run's time
  // so far, and its last point: even over the whole run, however often it was thinned.
  try {
    SQLite::Statement thin(
        *db_,
        "DELETE FROM run_samples WHERE rowid IN (SELECT id FROM (SELECT s.rowid AS id, "
        "s.at_ms AS at_ms, b.t1 AS t1, row_number() OVER (PARTITION BY (s.at_ms - "
        "b.t0) * ?2 / (b.t1 - b.t0 + 1) ORDER BY s.at_ms, s.rowid) AS k FROM "
        "run_samples s, (SELECT min(at_ms) AS t0, max(at_ms) AS t1 FROM run_samples "
        "WHERE run_id = ?1) b WHERE s.run_id = ?1) WHERE k > 1 AND at_ms < t1)");
    BindAll(thin, id, kMaxSamplesPerRun / 2);
    thin.exec();
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    return SqlError("cannot thin a run's samples", e);
  }
}

absl::StatusOr<std::vector<RunSample>> Ledger::Samples(const std::string& id) {
  std::vector<RunSample> out;
  try {
    SQLite::Statement s(*db_,
                        "SELECT at_ms, memory_bytes, memory_limit_bytes, cpu_cores, "
                        "memory_pressure, cpu_pressure FROM run_samples WHERE run_id = ? "
                        "ORDER BY at_ms, rowid");
    BindAll(s, id);
    while (s.executeStep()) {
      out.push_back({absl::FromUnixMillis(s.getColumn(0).getInt64()), OptUint(s.getColumn(1)),
                     OptUint(s.getColumn(2)), OptReal(s.getColumn(3)), OptReal(s.getColumn(4)),
                     OptReal(s.getColumn(5))});
    }
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot read the ledger \"%s\"", path_), e);
  }
  return out;
}

}  // namespace stagewatch
