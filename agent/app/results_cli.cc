#include "app/results_cli.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "app/cli_ledger.h"
#include "json_text.h"
#include "runs/ledger.h"
#include "runs/run_comparison.h"
#include "runs/run_results.h"
#include "runs/terminal_text.h"

namespace stagewatch {

ResultsCli::ResultsCli(CLI::App& app) {
  results_ = app.add_subcommand("results", "Record what a run computed (name=value, or a file "
                                           "of them), e.g. for a run no launcher started")
                 ->fallthrough();
  results_->add_option("id", run_id_, "The run id")->required();
  results_->add_option("results", words_, "name=value ... (e.g. accuracy=0.9547 rows=120000)");
  results_->add_option("--file", file_, "A results file: a JSON object of name → number, or "
                                        "`name value` lines");
  results_->add_option("--ledger.path", ledger_path_,
                       "The run ledger (default: runs.ledger_path)");
  CLI::App* runs = app.get_subcommand("runs");
  compare_ = runs->add_subcommand("compare", "Two runs side by side: every figure and result, "
                                             "and B's wall time against A's by cause")
                 ->fallthrough();
  compare_->add_option("a", compare_a_, "The first run id (the reference)")->required();
  compare_->add_option("b", compare_b_, "The second run id")->required();
  compare_->add_flag("--json", json_, "Print JSON");
}

std::string ResultsCli::LedgerPath(const Config& config) const {
  if (!ledger_path_.empty()) return ledger_path_;
  // `runs --ledger.path` is parsed into RunsCli; read it back from the parent's option.
  const CLI::Option* o = compare_->get_parent()->get_option_no_throw("--ledger.path");
  if (*compare_ && o != nullptr && o->count() > 0) return o->as<std::string>();
  return config.runs.ledger_path;
}

std::optional<int> ResultsCli::Dispatch(const Config& config) {
  if (*results_) return Record(config);
  if (*compare_) return Compare(config);
  return std::nullopt;
}

int ResultsCli::Record(const Config& config) {
  if (words_.empty() == file_.empty()) {
    return FailCommand("results", absl::InvalidArgumentError(
        "give the results as name=value words or with --file PATH (one of them)"));
  }
  ParsedResults parsed;
  if (!file_.empty()) {
    absl::StatusOr<ParsedResults> read = ReadResultsFile(file_);
    if (absl::IsNotFound(read.status())) {
      return FailCommand("results", absl::NotFoundError(absl::StrCat("no file ", file_)));
    }
    if (!read.ok()) return FailCommand("results", read.status());
    parsed = *std::move(read);
  } else {
    parsed = ParseResultWords(words_);
  }
  for (const std::string& p : parsed.problems) {
    std::cerr << "stagewatch results: " << TerminalText(p) << " (skipped)\n";
  }
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(LedgerPath(config), config.runs);
  if (!ledger.ok()) return FailCommand("results", ledger.status());
  if (absl::StatusOr<RunRecord> run = GetRunOrExplain(**ledger, run_id_); !run.ok()) {
    return FailCommand("results", run.status());
  }
  if (parsed.values.empty()) {
    return FailCommand("results", absl::InvalidArgumentError("no result could be read; nothing "
                                                             "was recorded"));
  }
  if (absl::Status s = (*ledger)->AddResults(run_id_, parsed.values); !s.ok()) {
    return FailCommand("results", s);
  }
  std::cout << "stagewatch results: recorded " << parsed.values.size() << " result"
            << (parsed.values.size() == 1 ? "" : "s") << " of run " << run_id_ << "\n";
  return parsed.problems.empty() ? 0 : 1;
}

int ResultsCli::Compare(const Config& config) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return FailCommand("runs compare", ledger.status());
  absl::StatusOr<RunRecord> a = GetRunOrExplain(**ledger, compare_a_);
  if (!a.ok()) return FailCommand("runs compare", a.status());
  absl::StatusOr<RunRecord> b = GetRunOrExplain(**ledger, compare_b_);
  if (!b.ok()) return FailCommand("runs compare", b.status());
  if (json_) {
    std::cout << JsonText(RunComparisonJson(*a, *b, config.runs), 2) << "\n";
  } else {
    std::cout << RunComparisonText(*a, *b, config.runs);
  }
  return 0;
}

}  // namespace stagewatch
