#include "runs/runs_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/run_efficiency.h"
#include "runs/run_placement.h"
#include "runs/run_placement_json.h"
#include "runs/runs_columns.h"
#include "runs/run_owner.h"
#include "runs/terminal_text.h"
#include "runs/verdict.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T, typename F>
std::string OrNotObserved(const std::optional<T>& v, F format) {
  return v ? format(*v) : std::string("not observed");
}

std::string Secs(double s) { return FormatSeconds(s); }

// The command as a shell would take it back: arguments with special characters single-quoted.
std::string ShellWords(const std::vector<std::string>& command) {
  std::vector<std::string> words;
  for (const std::string& arg : command) {
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_./=:,+@%-") == std::string::npos;
    if (plain) {
      words.push_back(arg);
      continue;
    }
    std::string quoted = "'";
    for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    words.push_back(quoted + "'");
  }
  return absl::StrJoin(words, " ");
}

std::string EndedBy(const RunEnd& end) {
  if (end.signal) {
    return absl::StrFormat("%s (%s)", SignalName(*end.signal),
                           end.signal_requested ? "sent through the launcher"
                                                : "not sent through the launcher");
  }
  if (end.exit_code) return absl::StrFormat("exit code %d", *end.exit_code);
  return end.closed_by == RunCloser::kAgent ? "its cgroup going away (closed by the agent)"
                                            : "unknown";
}

// Left-aligned columns, two spaces apart, each as wide as its widest cell so far (`width`,
// kept from one call to the next by a table written a page at a time). Every cell's text is
// made safe for a terminal: this is the one way ledger text reaches one, with the first lines.
std::string Table(const std::vector<std::vector<std::string>>& cells,
                  std::vector<size_t>& width) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : cells) {
    std::vector<std::string>& shown = rows.emplace_back();
    for (const std::string& cell : row) shown.push_back(TerminalText(cell));
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < shown.size(); ++i) width[i] = std::max(width[i], shown[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string Table(const std::vector<std::vector<std::string>>& cells) {
  std::vector<size_t> width;
  return Table(cells, width);
}

json VerdictJson(const Verdict& v) {
  json reasons = json::array();
  for (const VerdictReason& r : v.reasons) {
    reasons.push_back({{"cause", r.cause}, {"seconds", Opt(r.seconds)}, {"share", Opt(r.share)},
                       {"text", r.text}});
  }
  return reasons;
}

}  // namespace

std::string LimitsText(const RunLimits& l) {
  std::vector<std::string> parts;
  if (l.memory_max_bytes) parts.push_back("memory-max " + FormatBytes(*l.memory_max_bytes));
  if (l.memory_high_bytes) parts.push_back("memory-high " + FormatBytes(*l.memory_high_bytes));
  if (l.cpu_max_cores) parts.push_back(absl::StrFormat("cpu-max %g", *l.cpu_max_cores));
  if (l.cpu_weight) parts.push_back(absl::StrFormat("cpu-weight %d", *l.cpu_weight));
  if (l.cpuset_cpus) parts.push_back("cpuset-cpus " + *l.cpuset_cpus);
  if (l.cpuset_mems) parts.push_back("cpuset-mems " + *l.cpuset_mems);
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

json LimitsJson(const RunLimits& l) {
  return {{"memory_max_bytes", Opt(l.memory_max_bytes)},
          {"memory_high_bytes", Opt(l.memory_high_bytes)},
          {"cpu_max_cores", Opt(l.cpu_max_cores)},
          {"cpu_weight", Opt(l.cpu_weight)},
          {"cpuset_cpus", Opt(l.cpuset_cpus)},
          {"cpuset_mems", Opt(l.cpuset_mems)}};
}

namespace {

// Its migrations, CPU time and memory by node and remote share; null where not observed.
json PlacementJson(const RunRecord& r) {
  const NumaMemory none;
  const NumaMemory& memory = r.end ? r.end->facts.memory_by_node : none;
  const std::optional<double> remote = RunRemoteMemoryShare(r);
  return {{"node_migrations", Opt(r.agent.node_migrations)},
          {"cross_node_migrations", Opt(r.agent.cross_node_migrations)},
          {"cpu_seconds_by_node", r.agent.cpu_seconds_by_node.empty()
                                      ? json(nullptr)
                                      : AgentPlacementJson(r.agent)["cpu_seconds_by_node"]},
          {"memory_by_node", memory.empty() ? json(nullptr) : MemoryByNodeJson(memory)},
          {"remote_memory_share", Opt(remote)}};
}

// The placement lines of `runs show`.
std::vector<std::pair<std::string, std::string>> PlacementRows(const RunRecord& r) {
  const AgentFacts& a = r.agent;
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("migrations", !a.node_migrations ? "not observed"
                                  : absl::StrFormat("%d within a node, %d across nodes",
                                                    *a.node_migrations,
                                                    a.cross_node_migrations.value_or(0)));
  rows.emplace_back("cpu by node", a.cpu_seconds_by_node.empty()
                                       ? "not observed"
                                       : CpuByNodeText(a.cpu_seconds_by_node));
  if (r.end) {
    std::string memory = r.end->facts.memory_by_node.empty()
                             ? "not observed"
                             : MemoryByNodeText(r.end->facts.memory_by_node) + " at its peak";
    if (std::optional<double> remote = RunRemoteMemoryShare(r)) {
      absl::StrAppend(&memory, absl::StrFormat("; remote %.0f%%", 100 * *remote));
    }
    rows.emplace_back("memory by node", memory);
  }
  return rows;
}

}  // namespace

json RunToJson(const RunRecord& r, const RunsConfig& config) {
  const Verdict v = JudgeRun(r, config);
  const RunStart& s = r.start;
  const CgroupFacts f = r.end ? r.end->facts : CgroupFacts{};
  json victims = json::array();
  for (const OomVictim& o : r.agent.oom_victims) {
    victims.push_back({{"pid", o.pid}, {"comm", o.comm}, {"kind", o.kind}, {"killer", o.killer}});
  }
  json preemptors = nullptr;
  if (r.agent.preemptors_observed) {
    preemptors = json::object();
    for (const auto& [stage, n] : r.agent.preemptors) preemptors[stage] = n;
  }
  json anomalies = nullptr;
  if (r.agent.anomalies_observed) {
    anomalies = json::array();
    for (const RunAnomaly& a : r.agent.anomalies) {
      anomalies.push_back({{"name", a.name}, {"at", FormatRfc3339(a.at)}, {"detail", a.detail}});
    }
  }
  const auto wall = r.Wall();
  json j = {
      {"id", s.id},
      {"stage", s.stage},
      {"pipeline", s.pipeline},
      {"pipeline_run", s.pipeline_run},
      {"user", s.user},
      {"uid", s.uid ? json(*s.uid) : json(nullptr)},
      {"host", s.host},
      {"command", s.command},
      {"source", RunSourceName(s.source)},
      {"cgroup_path", s.cgroup_path},
      {"start", FormatRfc3339(s.start)},
      {"end", r.end ? json(FormatRfc3339(r.end->end)) : json(nullptr)},
      {"wall_seconds", wall ? json(absl::ToDoubleSeconds(*wall)) : json(nullptr)},
      {"exit_code", r.end ? Opt(r.end->exit_code) : json(nullptr)},
      {"signal", r.end ? Opt(r.end->signal) : json(nullptr)},
      {"signal_requested", r.end && r.end->signal_requested},
      {"closed_by", r.end ? json(r.end->closed_by == RunCloser::kAgent ? "agent" : "launcher")
                          : json(nullptr)},
      {"limits", LimitsJson(s.limits)},
      {"verdict", VerdictName(v.kind)},
      {"summary", v.Summary()},
      {"reasons", VerdictJson(v)},
      {"oom_kills",
       {{"kernel", Opt(f.oom_kills_kernel)},
        {"userspace", Opt(r.agent.oom_kills_userspace)},
        {"victims", victims}}},
      {"memory_peak_bytes", Opt(f.memory_peak_bytes)},
      {"memory_limit_bytes", Opt(f.memory_limit_bytes)},
      {"memory_failcnt", Opt(f.memory_failcnt)},
      {"memory_mean_bytes", Opt(f.memory_mean_bytes)},
      {"memory_p95_bytes", Opt(f.memory_p95_bytes)},
      {"near_limit_seconds", Opt(f.near_limit_seconds)},
      {"memory_pressure_seconds", Opt(f.memory_pressure_seconds)},
      {"cpu_pressure_seconds", Opt(f.cpu_pressure_seconds)},
      {"io_pressure_seconds", Opt(f.io_pressure_seconds)},
      {"reclaim_stall_seconds", Opt(r.agent.reclaim_stall_seconds)},
      {"cpu_seconds", Opt(f.cpu_seconds)},
      {"cpu_p95_cores", Opt(f.cpu_p95_cores)},
      {"cpu_throttled_seconds", Opt(f.cpu_throttled_seconds)},
      {"cpu_throttled_wall_seconds", Opt(f.cpu_throttled_wall_seconds)},
      {"run_queue_wait_seconds", Opt(r.agent.run_queue_wait_seconds)},
      {"run_queue_throttled_seconds", Opt(r.agent.run_queue_throttled_seconds)},
      {"preemptors", preemptors},
      {"anomalies", anomalies},
      {"agent_observed", r.agent_observed},
      {"not_observed", v.unobserved},
      {"results", r.results},
  };
  j["efficiency"] = EfficiencyToJson(EfficiencyOf(r, OnlineCpuCount()));
  j["placement"] = PlacementJson(r);
  return j;
}

std::string RunsTable(const std::vector<RunRecord>& runs, const RunsConfig& config) {
  if (runs.empty()) return "no runs\n";
  return RunsTableWriter(config).Page(runs);
}

std::string RunsTableWriter::Page(const std::vector<RunRecord>& runs) {
  std::vector<std::vector<std::string>> rows;
  if (!header_written_) {
    std::vector<std::string>& header = rows.emplace_back();
    for (const RunColumn* c : columns_) header.push_back(c->header);
    header_written_ = true;
  }
  for (const RunRecord& r : runs) {
    const Verdict v = JudgeRun(r, config_);
    std::vector<std::string>& row = rows.emplace_back();
    for (const RunColumn* c : columns_) row.push_back(c->cell(r, v));
  }
  return Table(rows, width_);
}

std::string RunDetails(const RunRecord& r, const RunsConfig& config) {
  const Verdict v = JudgeRun(r, config);
  const RunStart& s = r.start;
  std::string out = TerminalText(absl::StrFormat("run %s (stage %s): %s", s.id, s.stage,
                                                 v.Summary())) + "\n";
  std::vector<std::vector<std::string>> rows;
  auto row = [&](std::string key, std::string value) { rows.push_back({"  " + key, value}); };
  if (!s.command.empty()) row("command", ShellWords(s.command));
  if (!s.pipeline.empty()) {
    row("pipeline", s.pipeline_run.empty() ? s.pipeline
                                           : absl::StrCat(s.pipeline, ", run ", s.pipeline_run));
  }
  row("started", FormatRfc3339(s.start));
  if (s.uid || !s.host.empty()) row("by", RunOwnerText(s));
  if (r.end) {
    row("ended", absl::StrFormat("%s (wall %s) by %s", FormatRfc3339(r.end->end),
                                 FormatSeconds(absl::ToDoubleSeconds(*r.Wall())), EndedBy(*r.end)));
  }
  row("limits", LimitsText(s.limits));
  if (r.end) {
    const CgroupFacts& f = r.end->facts;
    std::string memory = OrNotObserved(f.memory_peak_bytes, [](uint64_t b) {
      return "peak " + FormatBytes(b);
    });
    if (f.memory_limit_bytes) absl::StrAppend(&memory, " of a ", FormatBytes(*f.memory_limit_bytes), " limit");
    if (f.memory_mean_bytes) {
      absl::StrAppend(&memory, "; mean ", FormatBytes(*f.memory_mean_bytes), ", p95 ",
                      FormatBytes(f.memory_p95_bytes.value_or(0)));
    }
    if (f.near_limit_seconds) absl::StrAppend(&memory, "; ", Secs(*f.near_limit_seconds), " near the limit");
    if (f.memory_failcnt) absl::StrAppend(&memory, "; failcnt ", *f.memory_failcnt);
    row("memory", memory);
    row("oom kills", absl::StrFormat(
                         "kernel %s, user-space %s",
                         OrNotObserved(f.oom_kills_kernel, [](uint64_t n) { return absl::StrCat(n); }),
                         OrNotObserved(r.agent.oom_kills_userspace,
                                       [](uint64_t n) { return absl::StrCat(n); })));
    for (const OomVictim& o : r.agent.oom_victims) {
      row("  victim", absl::StrFormat("%s (pid %d, %s%s)", o.comm, o.pid, o.kind,
                                      o.killer.empty() ? "" : " by " + o.killer));
    }
    std::string cpu = OrNotObserved(f.cpu_seconds, [](double c) { return Secs(c) + " of CPU"; });
    if (f.cpu_p95_cores) absl::StrAppend(&cpu, absl::StrFormat(", p95 %.2f CPUs", *f.cpu_p95_cores));
    absl::StrAppend(&cpu, "; throttled ", OrNotObserved(f.cpu_throttled_seconds, Secs));
    row("cpu", cpu);
    const RunEfficiency e = EfficiencyOf(r, OnlineCpuCount());  // as seff prints them
    row("cpu efficiency", CpuEfficiencyText(e, r));
    row("memory efficiency", MemoryEfficiencyText(e));
    row("pressure", absl::StrFormat("memory %s, cpu %s, io %s (PSI some)",
                                    OrNotObserved(f.memory_pressure_seconds, Secs),
                                    OrNotObserved(f.cpu_pressure_seconds, Secs),
                                    OrNotObserved(f.io_pressure_seconds, Secs)));
  }
  for (auto& [key, value] : PlacementRows(r)) row(key, value);
  row("reclaim stalls", OrNotObserved(r.agent.reclaim_stall_seconds, Secs));
  std::string wait = OrNotObserved(r.agent.run_queue_wait_seconds, Secs);
  if (r.agent.run_queue_throttled_seconds) {
    absl::StrAppend(&wait, ", of it throttled ", Secs(*r.agent.run_queue_throttled_seconds));
  }
  row("run-queue wait", wait);
  std::vector<std::string> preemptors;
  for (const auto& [stage, n] : r.agent.preemptors) preemptors.push_back(absl::StrCat(stage, " ×", n));
  row("preempted by", !r.agent.preemptors_observed ? "not observed"
                      : preemptors.empty()         ? "nobody"
                                                   : absl::StrJoin(preemptors, ", "));
  std::vector<std::string> anomalies;
  for (const RunAnomaly& a : r.agent.anomalies) {
    anomalies.push_back(absl::StrCat(a.name, " at ", FormatRfc3339(a.at)));
  }
  row("anomalies", !r.agent.anomalies_observed ? "not observed"
                   : anomalies.empty()         ? "none"
                                               : absl::StrJoin(anomalies, ", "));
  row("cgroup", absl::StrFormat("%s (%s run)", s.cgroup_path, RunSourceName(s.source)));
  std::vector<std::string> results;
  for (const auto& [name, value] : r.results) results.push_back(absl::StrCat(name, " ", FormatExact(value)));
  row("results", results.empty() ? "none recorded" : absl::StrJoin(results, ", "));
  if (!v.unobserved.empty()) {
    row("not observed", absl::StrJoin(v.unobserved, ", ") +
                            (r.agent_observed ? "" : " (no agent watched this run)"));
  }
  return out + Table(rows);
}

json AdviceToJson(const Advice& a) {
  json periods = json::array();
  for (const LimitPeriod& p : a.periods) {
    periods.push_back({{"limits", LimitsJson(p.limits)},
                       {"runs", p.runs},
                       {"first_start", FormatRfc3339(p.first_start)},
                       {"last_start", FormatRfc3339(p.last_start)},
                       {"median_wall_seconds", p.median_wall_seconds},
                       {"verdicts", p.verdicts}});
  }
  json j = {{"stage", a.stage},
            {"enough_runs", a.enough_runs},
            {"evidence",
             {{"runs", a.runs_counted},
              {"runs_with_peak", a.runs_with_peak},
              {"verdicts", a.verdicts},
              {"clean_runs", a.verdicts.count("clean") ? a.verdicts.at("clean") : 0},
              {"largest_peak_bytes", a.largest_peak_bytes},
              {"percentile_peak_bytes", a.percentile_peak_bytes},
              {"percentile", a.percentile},
              {"oom_killed_at_limit_bytes", Opt(a.oom_limit_bytes)},
              {"cpu_percentile_cores", Opt(a.cpu_percentile_cores)},
              {"throttled_at_cores", Opt(a.throttled_at_cores)}}},
            {"limit_periods", periods}};
  j["limit_changes"] = json::array();
  for (const LimitChange& c : a.limit_changes) j["limit_changes"].push_back(LimitChangeToJson(c));
  if (a.enough_runs) {
    j["memory_max_bytes"] = a.memory_max_bytes;
    j["memory_high_bytes"] = a.memory_high_bytes;
    j["cpu_max_cores"] = Opt(a.cpu_max_cores);
    j["why"] = a.why;
  } else {
    j["memory_max_bytes"] = nullptr;
    j["memory_high_bytes"] = nullptr;
    j["cpu_max_cores"] = nullptr;
    j["not_enough"] = a.not_enough;
  }
  return j;
}

std::string AdviceText(const Advice& a) {
  std::vector<std::string> verdicts;
  for (const auto& [name, n] : a.verdicts) verdicts.push_back(absl::StrCat(n, " ", name));
  std::string out;
  if (!a.enough_runs) {
    out = absl::StrFormat("stage %s: %s\n", a.stage, a.not_enough);
  } else {
    out = absl::StrFormat("stage %s: set --memory-max %d (%s), --memory-high %d (%s)", a.stage,
                          a.memory_max_bytes, FormatBytes(a.memory_max_bytes), a.memory_high_bytes,
                          FormatBytes(a.memory_high_bytes));
    if (a.cpu_max_cores) absl::StrAppend(&out, absl::StrFormat(", --cpu-max %.2f", *a.cpu_max_cores));
    absl::StrAppend(&out, "\n");
    absl::StrAppend(&out, absl::StrFormat(
                              "evidence: %d runs (%s); largest peak %s, p%.0f peak %s", a.runs_counted,
                              absl::StrJoin(verdicts, ", "), FormatBytes(a.largest_peak_bytes),
                              a.percentile * 100, FormatBytes(a.percentile_peak_bytes)));
    if (a.oom_limit_bytes) {
      absl::StrAppend(&out, "; OOM-killed at a ", FormatBytes(*a.oom_limit_bytes), " limit");
    }
    absl::StrAppend(&out, "\n");
    for (const std::string& why : a.why) absl::StrAppend(&out, "  ", why, "\n");
  }
  if (a.periods.size() > 1) {
    absl::StrAppend(&out, "the limits changed between runs:\n");
    std::vector<std::vector<std::string>> rows = {
        {"  FROM", "LIMITS", "RUNS", "MEDIAN WALL", "VERDICTS"}};
    for (const LimitPeriod& p : a.periods) {
      std::vector<std::string> v;
      for (const auto& [name, n] : p.verdicts) v.push_back(absl::StrCat(n, " ", name));
      rows.push_back({"  " + FormatRfc3339(p.first_start), LimitsText(p.limits),
                      absl::StrCat(p.runs), FormatSeconds(p.median_wall_seconds),
                      absl::StrJoin(v, ", ")});
    }
    absl::StrAppend(&out, Table(rows));
  }
  if (!a.limit_changes.empty()) {
    absl::StrAppend(&out, "before and after each change (medians; p: Mann-Whitney U test):\n");
    for (const LimitChange& c : a.limit_changes) {
      absl::StrAppend(&out, "  ", TerminalText(LimitChangeLine(c)), "\n");
    }
  }
  return out;
}

std::string TextTable(const std::vector<std::vector<std::string>>& cells) { return Table(cells); }

}  // namespace stagewatch
