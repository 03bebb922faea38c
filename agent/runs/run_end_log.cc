#include "runs/run_end_log.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "log.h"

namespace stagewatch {

void LogRunFinished(const RunRecord& run, const Verdict& verdict) {
  std::vector<std::string> causes;
  for (const VerdictReason& r : verdict.reasons) causes.push_back(r.cause);
  std::vector<LogField> fields = {{"run_id", run.start.id}, {"stage", run.start.stage}};
  if (!run.start.pipeline.empty()) fields.emplace_back("pipeline", run.start.pipeline);
  fields.emplace_back("verdict", VerdictName(verdict.kind));
  fields.emplace_back("reasons", absl::StrJoin(causes, ","));
  if (run.end) {
    const RunEnd& end = *run.end;
    const CgroupFacts& f = end.facts;
    if (end.exit_code) fields.emplace_back("exit_code", *end.exit_code);
    if (end.signal) fields.emplace_back("signal", SignalName(*end.signal));
    fields.emplace_back("wall_seconds", absl::ToDoubleSeconds(end.end - run.start.start));
    if (f.cpu_seconds) fields.emplace_back("cpu_seconds", *f.cpu_seconds);
    if (f.memory_peak_bytes) fields.emplace_back("memory_peak_bytes", *f.memory_peak_bytes);
    const std::optional<uint64_t> limit =
        f.memory_limit_bytes ? f.memory_limit_bytes : run.start.limits.memory_max_bytes;
    if (limit) fields.emplace_back("memory_limit_bytes", *limit);
    if (f.oom_kills_kernel || run.agent.oom_kills_userspace) {
      fields.emplace_back("oom_kills", f.oom_kills_kernel.value_or(0) +
                                           run.agent.oom_kills_userspace.value_or(0));
    }
  }
  Log::Write(LogLevel::kInfo, "run finished", fields);
}

}  // namespace stagewatch
