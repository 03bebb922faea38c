// The agent's pipeline pages: /pipelines (pipeline runs, newest first, filtered by ?pipeline=)
// and /pipelines/<id> (one night as one timeline: a bar per run on a shared time axis, coloured
// by verdict, with where each run waited for CPU or stalled on memory, its OOM kills and
// anomalies; the night's verdict, its wall against its usual nights, its deadline and the runs
// that made it longer), and the same as JSON at /api/v1/pipelines and /api/v1/pipelines/<id>.
// Read through PipelinesSource; every string from the ledger is escaped.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "config/runs_config.h"
#include "exporters/http/http_server.h"
#include "runs/pipelines_source.h"

namespace stagewatch::exporters {

// Answers one request for a path under /pipelines or /api/v1/pipelines: 200, 400 (a bad
// parameter, or an id two pipelines share without ?pipeline=), 404 (an unknown pipeline run)
// or 503 (the ledger cannot be read, and why).
HttpReply AnswerPipelinesRequest(PipelinesSource& source, const RunsConfig& config,
                                 const HttpRequest& request);

// The night's timeline: an <svg> with a bar per run (data-run, data-start and data-end on each,
// x from the first start to the last end, or `now` while a run is open).
std::string PipelineTimelineSvg(const PipelineRunView& view, absl::Time now);

// The four handlers for the HTTP server; `source` must outlive it.
std::vector<ExtraHandler> PipelinesHandlers(PipelinesSource* source, RunsConfig config);

}  // namespace stagewatch::exporters
