// One structured log line per finished run, so that a site's log store (Loki, Elasticsearch)
// gets its runs without new parts: logfmt or JSON as --log.format says.
#pragma once

#include "runs/run_record.h"
#include "runs/verdict.h"

namespace stagewatch {

// msg="run finished" with run_id, stage, pipeline (when the run has one), verdict, reasons
// (the verdict's causes, comma-separated), exit_code or signal, and the figures known of it:
// wall_seconds, cpu_seconds, memory_peak_bytes, memory_limit_bytes, oom_kills.
void LogRunFinished(const RunRecord& run, const Verdict& verdict);

}  // namespace stagewatch
