#include "runs/pipelines_source.h"

#include <utility>

namespace stagewatch {

absl::StatusOr<PipelineRunPage> LedgerPipelinesSource::List(const PipelineRunFilter& filter) {
  PipelineRunPage page;
  absl::Status s = ledger_->Read([&](Ledger& l) -> absl::Status {
    absl::StatusOr<PipelineRunPage> read = l.ListPipelineRuns(filter);
    if (!read.ok()) return read.status();
    page = *std::move(read);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return page;
}

absl::StatusOr<PipelineRunView> LedgerPipelinesSource::Get(const std::string& pipeline,
                                                           const std::string& id) {
  PipelineRunView view;
  absl::Status s = ledger_->Read([&](Ledger& l) -> absl::Status {
    absl::StatusOr<std::string> of = PipelineOfRun(l, pipeline, id);
    if (!of.ok()) return of.status();
    const auto config = pipelines_.find(*of);
    absl::StatusOr<std::optional<PipelineRunReport>> report = ReportPipelineRun(
        l, *of, id, runs_, config == pipelines_.end() ? nullptr : &config->second, absl::Now(),
        zone_);
    if (!report.ok()) return report.status();
    if (!*report) return absl::NotFoundError("the pipeline run's runs were removed meanwhile");
    view.report = **std::move(report);
    for (const PipelineRunMember& m : view.report.runs) {
      absl::StatusOr<std::vector<PressureSpan>> spans =
          l.PressureSpans(m.run.start.id, kStallShare);
      if (!spans.ok()) return spans.status();
      view.pressure[m.run.start.id] = *std::move(spans);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return view;
}

}  // namespace stagewatch
