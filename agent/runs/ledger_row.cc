#include "runs/ledger_row.h"

#include <SQLiteCpp/Column.h>

#include <cstdint>
#include <optional>

#include "nlohmann/json.hpp"
#include "json_text.h"
#include "runs/ledger_sqlite.h"
#include "runs/run_placement_json.h"
#include "units.h"

namespace stagewatch {
namespace {

using nlohmann::json;

// Text columns written by this code; a bad one means someone edited the file by hand.
json ParseJsonColumn(const std::string& text, json fallback) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

}  // namespace

std::string_view RunSourceName(RunSource source) {
  return source == RunSource::kDiscovered ? "discovered" : "launcher";
}

namespace ledger_row {

using ledger_sqlite::OptInt;
using ledger_sqlite::OptReal;
using ledger_sqlite::OptText;
using ledger_sqlite::OptUint;

absl::Time TimeOr(const std::string& text, absl::Time fallback) {
  absl::StatusOr<absl::Time> t = ParseRfc3339(text);
  return t.ok() ? *t : fallback;
}

std::string VictimsText(const std::vector<OomVictim>& victims) {
  json out = json::array();
  for (const OomVictim& v : victims) {
    out.push_back({{"pid", v.pid}, {"comm", v.comm}, {"kind", v.kind}, {"killer", v.killer}});
  }
  return JsonText(out);
}

std::string AnomaliesText(const std::vector<RunAnomaly>& anomalies) {
  json out = json::array();
  for (const RunAnomaly& a : anomalies) {
    out.push_back({{"name", a.name}, {"at", FormatRfc3339(a.at)}, {"detail", a.detail}});
  }
  return JsonText(out);
}

std::string ResultsText(const std::map<std::string, double>& results) {
  json out = json::object();
  for (const auto& [name, value] : results) out[name] = value;
  return JsonText(out);
}

RunRecord DecodeRow(const SQLite::Statement& s) {
  RunRecord r;
  int c = 0;
  auto next = [&] { return s.getColumn(c++); };
  auto text = [&] { return std::string(next().getText()); };
  RunStart& st = r.start;
  st.id = text();
  st.stage = text();
  st.pipeline = text();
  for (const json& arg : ParseJsonColumn(text(), json::array())) {
    if (arg.is_string()) st.command.push_back(arg.get<std::string>());
  }
  st.source = text() == "discovered" ? RunSource::kDiscovered : RunSource::kLauncher;
  st.cgroup_path = text();
  st.launcher_pid = OptInt(next());
  st.start = TimeOr(text(), absl::UnixEpoch());
  const bool ended = !s.isColumnNull(c);
  const std::string end_text = text();
  const std::string closed_by = text();
  RunEnd end;
  end.end = TimeOr(end_text, st.start);
  end.closed_by = closed_by == "agent" ? RunCloser::kAgent : RunCloser::kLauncher;
  if (auto v = OptInt(next())) end.exit_code = static_cast<int>(*v);
  if (auto v = OptInt(next())) end.signal = static_cast<int>(*v);
  end.signal_requested = next().getInt64() != 0;
  st.limits.memory_max_bytes = OptUint(next());
  st.limits.memory_high_bytes = OptUint(next());
  st.limits.cpu_max_cores = OptReal(next());
  if (auto v = OptInt(next())) st.limits.cpu_weight = static_cast<uint32_t>(*v);
  CgroupFacts& f = end.facts;
  f.memory_limit_bytes = OptUint(next());
  f.memory_peak_bytes = OptUint(next());
  f.memory_failcnt = OptUint(next());
  f.memory_mean_bytes = OptUint(next());
  f.memory_p95_bytes = OptUint(next());
  f.near_limit_seconds = OptReal(next());
  f.oom_kills_kernel = OptUint(next());
  f.cpu_seconds = OptReal(next());
  f.cpu_throttled_seconds = OptReal(next());
  f.cpu_p95_cores = OptReal(next());
  f.memory_pressure_seconds = OptReal(next());
  f.cpu_pressure_seconds = OptReal(next());
  if (ended) r.end = end;
  r.agent_observed = next().getInt64() != 0;
  AgentFacts& a = r.agent;
  a.oom_kills_userspace = OptUint(next());
  for (const json& v : ParseJsonColumn(text(), json::array())) {
    if (!v.is_object()) continue;
    a.oom_victims.push_back({v.value("pid", int64_t{0}), v.value("comm", ""),
                             v.value("kind", ""), v.value("killer", "")});
  }
  a.reclaim_stall_seconds = OptReal(next());
  a.run_queue_wait_seconds = OptReal(next());
  a.preemptors_observed = !s.isColumnNull(c);
  const json preemptors = ParseJsonColumn(text(), json::object());
  for (const auto& [stage, n] : preemptors.items()) {
    if (n.is_number_unsigned()) a.preemptors[stage] = n.get<uint64_t>();
  }
  a.anomalies_observed = !s.isColumnNull(c);
  for (const json& v : ParseJsonColumn(text(), json::array())) {
    if (!v.is_object()) continue;
    a.anomalies.push_back({v.value("name", ""), TimeOr(v.value("at", ""), st.start),
                           v.value("detail", "")});
  }
  a.saw_end = next().getInt64() != 0;
  const std::optional<double> throttled_wall = OptReal(next());
  if (r.end) r.end->facts.cpu_throttled_wall_seconds = throttled_wall;
  a.run_queue_throttled_seconds = OptReal(next());
  st.pipeline_run = text();
  const json results = ParseJsonColumn(text(), json::object());  // outlives items()
  for (const auto& [name, value] : results.items()) {
    if (value.is_number()) r.results[name] = value.get<double>();
  }
  const std::optional<double> io_pressure = OptReal(next());
  if (r.end) r.end->facts.io_pressure_seconds = io_pressure;
  st.user = text();
  st.uid = OptInt(next());
  st.host = text();
  st.limits.cpuset_cpus = OptText(next());
  st.limits.cpuset_mems = OptText(next());
  const std::optional<std::string> memory_by_node = OptText(next());
  if (r.end && memory_by_node) {
    r.end->facts.memory_by_node = MemoryByNodeFrom(ParseJsonColumn(*memory_by_node, nullptr));
  }
  if (std::optional<std::string> placement = OptText(next())) {
    AgentPlacementFrom(ParseJsonColumn(*placement, nullptr), a);
  }
  return r;
}

}  // namespace ledger_row
}  // namespace stagewatch
