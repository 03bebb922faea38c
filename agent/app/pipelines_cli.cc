#include "app/pipelines_cli.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "app/cli_ledger.h"
#include "json_text.h"
#include "runs/ledger.h"
#include "runs/orphan_runs.h"
#include "runs/pipeline_report.h"
#include "runs/pipeline_run.h"

namespace stagewatch {

PipelinesCli::PipelinesCli(CLI::App& app) {
  CLI::App* pipelines =
      app.add_subcommand("pipelines", "Look at pipeline runs: the runs of one night of a "
                                      "pipeline, as one")
          ->require_subcommand(1)
          ->fallthrough();
  pipelines->add_option("--ledger.path", ledger_path_,
                        "The run ledger (default: runs.ledger_path, "
                        "/var/lib/stagewatch/ledger.db)");
  pipelines->add_option("--pipeline", pipeline_, "Only this pipeline's runs");
  list_ = pipelines->add_subcommand("list", "Pipeline runs, newest first")->fallthrough();
  list_->add_option("--limit", limit_, "At most this many pipeline runs (default 50)")
      ->check(CLI::Range(1, 100000));
  list_->add_flag("--json", json_, "Print JSON");
  show_ = pipelines->add_subcommand("show", "One pipeline run: its verdict, its wall time "
                                            "against its usual nights, its deadline, its runs")
              ->fallthrough();
  show_->add_option("id", id_, "The pipeline run id (e.g. the night's date)")->required();
  show_->add_flag("--json", json_, "Print JSON");
}

std::string PipelinesCli::LedgerPath(const Config& config) const {
  return ledger_path_.empty() ? config.runs.ledger_path : ledger_path_;
}

std::optional<int> PipelinesCli::Dispatch(const Config& config) {
  if (*list_) return List(config);
  if (*show_) return Show(config);
  return std::nullopt;
}

int PipelinesCli::List(const Config& config) {
  if (!pipeline_.empty()) {
    if (absl::Status s = CheckPipelineName(pipeline_); !s.ok()) {
      return FailCommand("pipelines list", s);
    }
  }
  TidyLedgerForListing(LedgerPath(config), config.runs, "", std::cerr);  // dead launchers' runs
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return FailCommand("pipelines list", ledger.status());
  absl::StatusOr<PipelineRunPage> page =
      (*ledger)->ListPipelineRuns({.pipeline = pipeline_, .limit = limit_});
  if (!page.ok()) return FailCommand("pipelines list", page.status());
  if (json_) {
    nlohmann::json out = nlohmann::json::array();
    for (const PipelineRunSummary& p : page->runs) out.push_back(PipelineRunSummaryJson(p));
    std::cout << JsonText(out, 2) << "\n";
  } else if (page->runs.empty()) {
    std::cout << "no pipeline runs (runs join one with `stagewatch run --pipeline P "
                 "--pipeline-run ID`, or by night for stages with a pipeline)\n";
  } else {
    std::cout << PipelineRunsTable(page->runs);
  }
  if (page->more) {
    std::cerr << "stagewatch pipelines list: more pipeline runs than the " << page->runs.size()
              << " shown (the newest); see more with --limit N\n";
  }
  return 0;
}

int PipelinesCli::Show(const Config& config) {
  if (!pipeline_.empty()) {
    if (absl::Status s = CheckPipelineName(pipeline_); !s.ok()) {
      return FailCommand("pipelines show", s);
    }
  }
  if (absl::Status s = CheckPipelineRunId(id_); !s.ok()) return FailCommand("pipelines show", s);
  TidyLedgerForListing(LedgerPath(config), config.runs, "", std::cerr);
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return FailCommand("pipelines show", ledger.status());
  absl::StatusOr<std::string> pipeline = PipelineOfRun(**ledger, pipeline_, id_);
  if (!pipeline.ok()) return FailCommand("pipelines show", pipeline.status());
  const auto it = config.pipelines.find(*pipeline);
  absl::StatusOr<std::optional<PipelineRunReport>> report = ReportPipelineRun(
      **ledger, *pipeline, id_, config.runs,
      it == config.pipelines.end() ? nullptr : &it->second, absl::Now(), absl::LocalTimeZone());
  if (!report.ok()) return FailCommand("pipelines show", report.status());
  if (!*report) {
    return FailCommand("pipelines show", absl::NotFoundError(absl::StrCat(
                                             "no pipeline run \"", id_, "\" in the ledger")));
  }
  if (json_) {
    std::cout << JsonText(PipelineRunReportJson(**report, config.runs), 2) << "\n";
  } else {
    std::cout << PipelineRunText(**report);
  }
  return 0;
}

}  // namespace stagewatch
