// The agent's run pages: /runs (recent runs, filtered by ?stage= and ?verdict=), /runs/<id>
// (the verdict and its reasons, then charts over the run's time), and the same as JSON at
// /api/v1/runs and /api/v1/runs/<id>. Read through RunsSource; every string from the ledger
// is escaped.
#pragma once

#include <vector>

#include "config/runs_config.h"
#include "exporters/http/http_server.h"
#include "runs/runs_source.h"

namespace stagewatch::exporters {

// Answers one request for a path under /runs or /api/v1/runs: 200, 400 (a bad parameter, with
// what is allowed), 404 (an unknown run) or 503 (the ledger cannot be read, and why).
HttpReply AnswerRunsRequest(RunsSource& source, const RunsConfig& config,
                            const HttpRequest& request);

// The four handlers for the HTTP server; `source` must outlive it.
std::vector<ExtraHandler> RunsHandlers(RunsSource* source, RunsConfig config);

}  // namespace stagewatch::exporters
