// A run's writes: begun, ended, the agent's facts merged in, withdrawn. Each stores the run's
// verdict as its row reads back after the write.
#include <sqlite3.h>

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "json_text.h"
#include "runs/ledger.h"
#include "runs/ledger_row.h"
#include "runs/ledger_sqlite.h"
#include "runs/run_placement_json.h"
#include "units.h"

namespace stagewatch {
namespace {

using ledger_sqlite::BindAll;
using ledger_sqlite::SqlError;
using ledger_sqlite::WriteTransaction;

// Run `open` (as read from the ledger) with `end`, as its row reads back once EndRun wrote it:
// the verdict stored with the end is then the one a reader of the row gets. Every figure
// JudgeRun reads is stored exactly (integers, REAL doubles) but the end's time, which the
// ledger keeps to the millisecond; the limits of the end facts are the row's, not the end's.
RunRecord AsStored(RunRecord open, const RunEnd& end) {
  open.end = end;
  open.end->end = ledger_row::TimeOr(FormatRfc3339(end.end), open.start.start);
  open.end->facts.limits.reset();
  return open;
}

std::optional<uint64_t> AddOpt(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  return b ? std::optional<uint64_t>(*a + *b) : a;
}
std::optional<double> AddOpt(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  return b ? std::optional<double>(*a + *b) : a;
}

// The agent's facts of a run with `add` merged in.
AgentFacts Merged(AgentFacts a, const AgentFacts& add) {
  a.oom_kills_userspace = AddOpt(a.oom_kills_userspace, add.oom_kills_userspace);
  a.oom_victims.insert(a.oom_victims.end(), add.oom_victims.begin(), add.oom_victims.end());
  a.reclaim_stall_seconds = AddOpt(a.reclaim_stall_seconds, add.reclaim_stall_seconds);
  a.run_queue_wait_seconds = AddOpt(a.run_queue_wait_seconds, add.run_queue_wait_seconds);
  a.run_queue_throttled_seconds =
      AddOpt(a.run_queue_throttled_seconds, add.run_queue_throttled_seconds);
  for (const auto& [stage, n] : add.preemptors) a.preemptors[stage] += n;
  a.preemptors_observed |= add.preemptors_observed || !add.preemptors.empty();
  a.anomalies.insert(a.anomalies.end(), add.anomalies.begin(), add.anomalies.end());
  a.anomalies_observed |= add.anomalies_observed || !add.anomalies.empty();
  a.saw_end |= add.saw_end;
  a.node_migrations = AddOpt(a.node_migrations, add.node_migrations);
  a.cross_node_migrations = AddOpt(a.cross_node_migrations, add.cross_node_migrations);
  for (const auto& [node, seconds] : add.cpu_seconds_by_node) {
    a.cpu_seconds_by_node[node] += seconds;
  }
  return a;
}

}  // namespace

absl::Status Ledger::BeginRun(const RunStart& st) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  nlohmann::json command = st.command;
  try {
    SQLite::Statement s(
        *db_,
        "INSERT INTO runs (id, stage, pipeline, pipeline_run, command, source, cgroup_path, "
        "launcher_pid, start_time, limit_memory_max_bytes, limit_memory_high_bytes, "
        "limit_cpu_max_cores, limit_cpu_weight, limit_cpuset_cpus, limit_cpuset_mems, user, "
        "uid, host, verdict, verdict_judged_with) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)");
    BindAll(s, st.id, st.stage, st.pipeline, st.pipeline_run, JsonText(command),
            std::string(RunSourceName(st.source)), st.cgroup_path, st.launcher_pid,
            FormatRfc3339(st.start), st.limits.memory_max_bytes, st.limits.memory_high_bytes,
            st.limits.cpu_max_cores, st.limits.cpu_weight, st.limits.cpuset_cpus,
            st.limits.cpuset_mems, st.user, st.uid, st.host, judged_with_);
    s.exec();
    return absl::OkStatus();
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() == SQLITE_CONSTRAINT) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "run id \"%s\" is in the ledger \"%s\" already; pick another --run-id, or leave it "
          "out to get a new one", st.id, path_));
    }
    return SqlError(
        absl::StrFormat("cannot record run \"%s\" in the ledger \"%s\"", st.id, path_), e);
  }
}

absl::StatusOr<RunRecord> Ledger::RunToChange(const std::string& id) {
  absl::StatusOr<std::optional<RunRecord>> existing = Get(id);
  if (!existing.ok()) return existing.status();
  if (!*existing) return absl::NotFoundError(absl::StrFormat("no run \"%s\" in the ledger", id));
  return **std::move(existing);
}

absl::Status Ledger::EndRun(const std::string& id, const RunEnd& end) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  // The end and the verdict it gives are one write.
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  absl::StatusOr<RunRecord> existing = RunToChange(id);
  if (!existing.ok()) return existing.status();
  if (existing->end) {
    return absl::FailedPreconditionError(absl::StrFormat("run \"%s\" has ended already", id));
  }
  const std::string verdict(
      VerdictName(JudgeRun(AsStored(*std::move(existing), end), judging_).kind));
  const CgroupFacts& f = end.facts;
  // A discovered run's limits go in the same statement as its end: one write, so no crash
  // or failed write leaves the run ended without them, and a batch stays one transaction.
  // The kernel's memory limit at the end stands for memory.max: exact at rmdir, else the last
  // sample's.
  const bool limits = f.limits.has_value();
  const RunLimits l = limits ? *f.limits : RunLimits{};
  auto limit = [](const char* column) {
    return absl::StrFormat("%s = CASE WHEN ? AND source = 'discovered' THEN ? ELSE %s END",
                           column, column);
  };
  int changed = 0;
  try {
    SQLite::Statement s(*db_, absl::StrCat(
        "UPDATE runs SET end_time = ?, closed_by = ?, exit_code = ?, signal = ?, "
        "signal_requested = ?, memory_limit_bytes = ?, memory_peak_bytes = ?, "
        "memory_failcnt = ?, memory_mean_bytes = ?, memory_p95_bytes = ?, "
        "near_limit_seconds = ?, oom_kills_kernel = ?, cpu_seconds = ?, "
        "cpu_throttled_seconds = ?, cpu_p95_cores = ?, memory_pressure_seconds = ?, "
        "cpu_pressure_seconds = ?, cpu_throttled_wall_seconds = ?, io_pressure_seconds = ?, "
        "memory_by_node = ?, verdict = ?, "
        "verdict_judged_with = ?, ",
        limit("limit_memory_max_bytes"), ", ", limit("limit_memory_high_bytes"), ", ",
        limit("limit_cpu_max_cores"), ", ", limit("limit_cpu_weight"),
        " WHERE id = ? AND end_time IS NULL"));
    BindAll(s, FormatRfc3339(end.end),
            std::string(end.closed_by == RunCloser::kAgent ? "agent" : "launcher"),
            end.exit_code, end.signal, end.signal_requested, f.memory_limit_bytes,
            f.memory_peak_bytes, f.memory_failcnt, f.memory_mean_bytes, f.memory_p95_bytes,
            f.near_limit_seconds, f.oom_kills_kernel, f.cpu_seconds, f.cpu_throttled_seconds,
            f.cpu_p95_cores, f.memory_pressure_seconds, f.cpu_pressure_seconds,
            f.cpu_throttled_wall_seconds, f.io_pressure_seconds,
            f.memory_by_node.empty()
                ? std::nullopt
                : std::optional<std::string>(JsonText(MemoryByNodeJson(f.memory_by_node))),
            verdict, judged_with_, limits,
            f.memory_limit_bytes, limits, l.memory_high_bytes, limits, l.cpu_max_cores, limits,
            l.cpu_weight, id);
    changed = s.exec();
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot end run \"%s\"", id), e);
  }
  if (changed != 1) return absl::InternalError(absl::StrFormat("run \"%s\" was not ended", id));
  return tx.Commit();
}

absl::Status Ledger::AddAgentFacts(const std::string& id, const AgentFacts& add) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  absl::StatusOr<RunRecord> existing = RunToChange(id);
  if (!existing.ok()) return existing.status();
  const AgentFacts a = Merged(existing->agent, add);
  nlohmann::json preemptors = nlohmann::json::object();
  for (const auto& [stage, n] : a.preemptors) preemptors[stage] = n;
  RunRecord merged = *std::move(existing);  // as the row reads back after this write
  merged.agent = a;
  merged.agent_observed = true;
  const nlohmann::json placement = AgentPlacementJson(a);
  try {
    SQLite::Statement s(*db_,
                        "UPDATE runs SET agent_observed = 1, oom_kills_userspace = ?, "
                        "oom_victims = ?, reclaim_stall_seconds = ?, run_queue_wait_seconds = ?, "
                        "run_queue_throttled_seconds = ?, preemptors = ?, anomalies = ?, "
                        "agent_saw_end = ?, placement = ?, verdict = ?, verdict_judged_with = ? "
                        "WHERE id = ?");
    BindAll(s, a.oom_kills_userspace, ledger_row::VictimsText(a.oom_victims),
            a.reclaim_stall_seconds, a.run_queue_wait_seconds, a.run_queue_throttled_seconds,
            a.preemptors_observed ? std::optional<std::string>(JsonText(preemptors))
                                  : std::nullopt,
            a.anomalies_observed
                ? std::optional<std::string>(ledger_row::AnomaliesText(a.anomalies))
                : std::nullopt,
            a.saw_end, placement.is_null() ? std::nullopt
                                           : std::optional<std::string>(JsonText(placement)),
            std::string(VerdictName(JudgeRun(merged, judging_).kind)), judged_with_, id);
    s.exec();
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot add agent facts to run \"%s\"", id), e);
  }
  return tx.Commit();
}

absl::Status Ledger::AddResults(const std::string& id,
                                const std::map<std::string, double>& results) {
  if (absl::Status s = Writable(); !s.ok()) return s;
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  absl::StatusOr<RunRecord> existing = RunToChange(id);
  if (!existing.ok()) return existing.status();
  std::map<std::string, double> merged = existing->results;
  for (const auto& [name, value] : results) merged[name] = value;
  try {
    SQLite::Statement s(*db_, "UPDATE runs SET results = ? WHERE id = ?");
    BindAll(s, ledger_row::ResultsText(merged), id);
    s.exec();
  } catch (const SQLite::Exception& e) {
    return SqlError(absl::StrFormat("cannot record results of run \"%s\"", id), e);
  }
  return tx.Commit();
}

absl::Status Ledger::WithdrawRun(const std::string& id) {
  WriteTransaction tx(*db_);
  if (absl::Status s = tx.begun(); !s.ok()) return s;
  const char* failed = "cannot withdraw the run's points";
  int withdrawn = 0;
  try {
    SQLite::Statement samples(*db_, "DELETE FROM run_samples WHERE run_id = ?");
    BindAll(samples, id);
    samples.exec();
    failed = nullptr;
    SQLite::Statement run(*db_, "DELETE FROM runs WHERE id = ? AND end_time IS NULL");
    BindAll(run, id);
    withdrawn = run.exec();
  } catch (const SQLite::Exception& e) {
    return SqlError(failed ? failed : absl::StrFormat("cannot withdraw run \"%s\"", id), e);
  }
  if (withdrawn != 1) {
    return absl::NotFoundError(absl::StrFormat("no open run \"%s\" in the ledger", id));
  }
  return tx.Commit();
}

}  // namespace stagewatch
