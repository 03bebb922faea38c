// The `runs:` section: where the ledger is, how runs are judged, and the limit advisor.
#include <string_view>

#include "config/config_sections.h"

namespace stagewatch::config_internal {
namespace {

absl::Status CheckLedgerPath(std::string_view path) {
  return !path.empty() && path[0] == '/' && path.back() != '/'
             ? absl::OkStatus()
             : absl::InvalidArgumentError("runs.ledger_path must be an absolute file path, "
                                          "e.g. /var/lib/stagewatch/ledger.db");
}

void ParseAdvise(ConfigReader& r, const ConfigValue& v, AdvisorConfig& a) {
  r.ParseMap(v, " in runs.advise", {
      {"min_runs", [&](const ConfigValue& f) { r.ReadInt(f, 1, 1000, a.min_runs); }},
      {"max_runs", [&](const ConfigValue& f) { r.ReadInt(f, 1, 10000, a.max_runs); }},
      {"memory_percentile",
       [&](const ConfigValue& f) { r.ReadFraction(f, a.memory_percentile); }},
      {"memory_margin", [&](const ConfigValue& f) { r.ReadPositive(f, a.memory_margin); }},
      {"oom_bump", [&](const ConfigValue& f) { r.ReadAtLeastOne(f, a.oom_bump); }},
      {"memory_high_fraction",
       [&](const ConfigValue& f) { r.ReadFraction(f, a.memory_high_fraction); }},
      {"cpu_margin", [&](const ConfigValue& f) { r.ReadPositive(f, a.cpu_margin); }},
  });
}

}  // namespace

void ParseRuns(ConfigReader& r, const ConfigValue& section, RunsConfig& runs) {
  r.ParseMap(section, " in runs", {
      {"ledger_path",
       [&](const ConfigValue& v) { r.ReadChecked(v, runs.ledger_path, CheckLedgerPath); }},
      {"degraded_fraction",
       [&](const ConfigValue& v) { r.ReadFraction(v, runs.degraded_fraction); }},
      {"normal_run_queue_wait_fraction", [&](const ConfigValue& v) {
         r.ReadPositive(v, runs.normal_run_queue_wait_fraction);
       }},
      {"remote_memory_threshold",
       [&](const ConfigValue& v) { r.ReadFraction(v, runs.remote_memory_threshold); }},
      {"info_per_stage", [&](const ConfigValue& v) { r.ReadInt(v, 0, 100, runs.info_per_stage); }},
      {"sample_reads_per_second", [&](const ConfigValue& v) {
         r.ReadInt(v, 0, 100000, runs.sample_reads_per_second);
       }},
      {"baseline_runs", [&](const ConfigValue& v) {
         r.ReadInt(v, 3, 1000, runs.baseline_runs);
       }},
      {"advise", [&](const ConfigValue& v) { ParseAdvise(r, v, runs.advise); }},
  });
}

}  // namespace stagewatch::config_internal
