// What the agent's pipeline pages read: pipeline runs, and one pipeline run's report with where
// its runs waited for CPU or stalled on memory. The ledger is one implementation
// (LedgerPipelinesSource); the pages know nothing of SQLite.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/pipelines_config.h"
#include "config/runs_config.h"
#include "runs/ledger.h"
#include "runs/pipeline_report.h"
#include "runs/runs_source.h"

namespace stagewatch {

struct PipelineRunView {
  PipelineRunReport report;
  std::map<std::string, std::vector<PressureSpan>> pressure;  // by run id (kStallShare)
};

class PipelinesSource {
 public:
  virtual ~PipelinesSource() = default;
  // NotFound when filter.after names no pipeline run.
  virtual absl::StatusOr<PipelineRunPage> List(const PipelineRunFilter& filter) = 0;
  // The pipeline run `id` of `pipeline` ("": the one pipeline that has it). NotFound and
  // FailedPrecondition (two pipelines share the id) as PipelineOfRun says.
  virtual absl::StatusOr<PipelineRunView> Get(const std::string& pipeline,
                                              const std::string& id) = 0;
};

// Reads through the run pages' ledger connection (LedgerRunsSource::Read), so it is
// Unavailable, and opened again, as they are. Times of day are in `zone`.
class LedgerPipelinesSource : public PipelinesSource {
 public:
  LedgerPipelinesSource(LedgerRunsSource* ledger, RunsConfig runs, PipelinesConfig pipelines,
                        absl::TimeZone zone = absl::LocalTimeZone())
      : ledger_(ledger), runs_(std::move(runs)), pipelines_(std::move(pipelines)), zone_(zone) {}
  absl::StatusOr<PipelineRunPage> List(const PipelineRunFilter& filter) override;
  absl::StatusOr<PipelineRunView> Get(const std::string& pipeline, const std::string& id) override;

 private:
  LedgerRunsSource* const ledger_;
  const RunsConfig runs_;
  const PipelinesConfig pipelines_;
  const absl::TimeZone zone_;
};

}  // namespace stagewatch
