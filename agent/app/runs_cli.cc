#include "app/runs_cli.h"

#include <filesystem>
#include <iostream>

#include "app/cli_ledger.h"
#include "app/exit_codes.h"
#include "runs/advise_bounds.h"
#include "runs/advise_format.h"
#include "runs/advisor.h"
#include "runs/pinning_advice.h"
#include "runs/baseline_comparison.h"
#include "runs/cpuset_request.h"
#include "json_text.h"
#include "runs/launcher.h"
#include "runs/ledger.h"
#include "runs/orphan_runs.h"
#include "runs/run_follow.h"
#include "runs/runs_columns.h"
#include "runs/runs_list_filter.h"
#include "runs/runs_report.h"
#include "runs/verdict.h"
#include "units.h"

namespace stagewatch {
namespace {

void AddLedgerFlag(CLI::App* app, std::string& path) {
  app->add_option("--ledger.path", path, "The run ledger (default: runs.ledger_path, "
                                         "/var/lib/stagewatch/ledger.db)");
}

}  // namespace

RunsCli::RunsCli(CLI::App& app) {
  run_ = app.add_subcommand("run", "Run a command as one run of a stage, in its own cgroup with "
                                   "limits, and record it in the ledger")
             ->fallthrough();
  run_->add_option("--stage", stage_, "The stage this run belongs to")->required();
  run_->add_option("--run-id", run_id_, "The run's id (default: generated, time-sortable)");
  run_->add_option("--pipeline", pipeline_,
                   "The pipeline the stage belongs to (default: $STAGEWATCH_PIPELINE)");
  run_->add_option("--pipeline-run", pipeline_run_,
                   "The pipeline's run (e.g. the night's date) this run belongs to (default: "
                   "$STAGEWATCH_PIPELINE_RUN)");
  run_->add_option("--memory-max", memory_max_, "Memory limit: bytes, or with K, M, G (1024s)");
  run_->add_option("--memory-high", memory_high_,
                   "Memory throttling point (v1: the soft limit): bytes, or with K, M, G");
  run_->add_option("--cpu-max", cpu_max_, "CPU limit in CPUs, e.g. 0.5 or 2");
  run_->add_option("--cpu-weight", cpu_weight_, "CPU weight 1-10000 (100 is the default share)")
      ->check(CLI::Range(1, 10000));
  run_->add_option("--cpuset-cpus", cpuset_cpus_,
                   "The CPUs the command may run on, e.g. 0-3,8 (cpuset controller)");
  run_->add_option("--cpuset-mems", cpuset_mems_,
                   "The NUMA nodes its memory may come from, e.g. 0 (cpuset controller)");
  run_->add_option("--cgroup.parent", cgroup_parent_,
                   "Make the run's cgroup beneath this one (default: your own cgroup)");
  AddLedgerFlag(run_, ledger_path_);
  run_->add_option("command", command_, "The command and its arguments, after --")->required();

  runs_ = app.add_subcommand("runs", "Look at recorded runs")->require_subcommand(1)->fallthrough();
  AddLedgerFlag(runs_, ledger_path_);
  list_ = runs_->add_subcommand("list", "Recent runs, newest first")->fallthrough();
  list_->add_option("--stage", list_flags_.stage, "Only this stage");
  list_->add_option("--pipeline", list_flags_.pipeline, "Only runs of this pipeline");
  list_->add_option("--since", list_flags_.since,
                    "Only runs started this long ago or less (24h, 7d), or at or after a time "
                    "(2026-12-01T08:00:00Z)");
  list_->add_option("--until", list_flags_.until,
                    "Only runs started before: that long ago (24h, 7d), or a time");
  list_->add_option("--verdict", list_flags_.verdict, "Only runs of this verdict")
      ->check(CLI::IsMember({"running", "clean", "unobserved", "degraded", "interrupted"}));
  list_->add_option("-o,--fields", fields_,
                    "The table's columns, comma-separated, as sacct -o (default "
                    "id,stage,start,wall,ended,peak_limit,verdict,why; also pipeline, source, "
                    "command, end, peak, limit, cpu, cpu_eff, mem_eff, oom_kills); --json keeps "
                    "every field");
  CLI::Option* limit = list_->add_option("--limit", limit_, "At most this many runs (default 1000)")
                           ->check(CLI::PositiveNumber);
  list_->add_flag("--all", all_, "Every run that matches")->excludes(limit);
  list_->add_flag("--json", json_, "Print JSON");
  show_ = runs_->add_subcommand("show", "One run: its verdict first, then the facts")->fallthrough();
  show_->add_option("id", show_id_, "The run id")->required();
  show_->add_flag("--json", json_, "Print JSON");
  show_->add_flag("--follow", follow_,
                  "For a running run: print its figures as they come, until it ends")
      ->excludes("--json");

  advise_ = app.add_subcommand("advise", "Recommend a stage's limits from its recorded runs")
                ->fallthrough();
  advise_->add_option("--stage", stage_, "The stage")->required();
  advise_->add_flag("--json", json_, "Print JSON");
  advise_->add_option("--format", advise_format_,
                      "Print only the target limits as run (flags), systemd (unit settings), "
                      "slurm (sbatch options) or kubernetes (resources) take them")
      ->check(CLI::IsMember({"run", "systemd", "slurm", "kubernetes"}));
  AddLedgerFlag(advise_, ledger_path_);
}

std::string RunsCli::LedgerPath(const Config& config) const {
  return ledger_path_.empty() ? config.runs.ledger_path : ledger_path_;
}

bool RunsCli::Launching() const { return run_->parsed(); }

std::optional<int> RunsCli::Dispatch(const Config& config) {
  if (*run_) return Run(config);
  if (*list_) return List(config);
  if (*show_) return Show(config);
  if (*advise_) return Advise(config);
  return std::nullopt;
}

int RunsCli::Run(const Config& config) {
  LaunchOptions o;
  o.stage = stage_;
  o.run_id = run_id_;
  o.pipeline = pipeline_;
  o.pipeline_run = pipeline_run_;
  // A driver script run by `stagewatch run --pipeline-run` passes its pipeline run on to the
  // runs it launches, through the environment the launcher gave it.
  if (const char* env = std::getenv("STAGEWATCH_PIPELINE"); o.pipeline.empty() && env) {
    o.pipeline = env;
  }
  if (const char* env = std::getenv("STAGEWATCH_PIPELINE_RUN"); o.pipeline_run.empty() && env) {
    o.pipeline_run = env;
  }
  o.cgroup_parent = cgroup_parent_;
  o.ledger_path = LedgerPath(config);
  o.command = command_;
  o.discovery_directory = config.discovery.directory;
  o.near_limit_fraction = config.memory.near_limit_fraction;
  o.sample_interval = config.memory.sample_interval;
  o.runs = config.runs;
  absl::Status bad;
  auto size = [&](const std::string& text, const char* flag) -> std::optional<uint64_t> {
    if (text.empty() || !bad.ok()) return std::nullopt;
    absl::StatusOr<uint64_t> bytes = ParseSize(text, flag);
    if (!bytes.ok()) bad = bytes.status();
    return bytes.ok() ? std::optional<uint64_t>(*bytes) : std::nullopt;
  };
  o.limits.memory_max_bytes = size(memory_max_, "--memory-max");
  o.limits.memory_high_bytes = size(memory_high_, "--memory-high");
  if (!cpu_max_.empty() && bad.ok()) {
    absl::StatusOr<double> cores = ParseCores(cpu_max_, "--cpu-max");
    if (cores.ok()) o.limits.cpu_max_cores = *cores;
    bad = cores.status();
  }
  o.limits.cpu_weight = cpu_weight_;
  auto cpuset = [&](const std::optional<std::string>& text, const char* flag,
                    CpusetKind kind) -> std::optional<std::string> {
    if (!text || !bad.ok()) return std::nullopt;
    absl::StatusOr<std::string> list = CanonicalCpuList(*text, flag);
    if (!list.ok()) {
      bad = absl::InvalidArgumentError(
          absl::StrCat(list.status().message(), "; ", HostHasText(kind)));
      return std::nullopt;
    }
    return *list;
  };
  o.limits.cpuset_cpus = cpuset(cpuset_cpus_, "--cpuset-cpus", CpusetKind::kCpus);
  o.limits.cpuset_mems = cpuset(cpuset_mems_, "--cpuset-mems", CpusetKind::kMems);
  if (!bad.ok()) {
    std::cerr << "stagewatch run: " << bad.message() << "\n";
    return kExitLauncherRefused;
  }
  absl::StatusOr<int> code = LaunchRun(o, std::cerr);
  if (!code.ok()) {
    std::cerr << "stagewatch run: " << code.status().message() << "\n";
    return kExitLauncherRefused;
  }
  return *code;
}

namespace {

// `items` (JSON values) as one JSON array written a piece at a time: the same text as
// JsonText(json::array(items), 2), without holding every run at once.
class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(std::ostream& out) : out_(out) {}
  void Add(const nlohmann::json& item) {
    out_ << (first_ ? "[\n  " : ",\n  ");
    first_ = false;
    const std::string text = JsonText(item, 2);
    for (char c : text) {
      out_ << c;
      if (c == '\n') out_ << "  ";  // JSON strings escape their newlines: these are dump's
    }
  }
  void Close() { out_ << (first_ ? "[]\n" : "\n]\n"); }

 private:
  std::ostream& out_;
  bool first_ = true;
};

int Fail(const char* command, const absl::Status& status) {
  return FailCommand(command, status);
}

}  // namespace

int RunsCli::List(const Config& config) {
  absl::StatusOr<RunFilter> parsed = RunFilterFromFlags(list_flags_, absl::Now());
  if (!parsed.ok()) return Fail("runs list", parsed.status());
  RunFilter& filter = *parsed;
  std::vector<const RunColumn*> columns = DefaultRunColumns();
  if (!fields_.empty()) {
    absl::StatusOr<std::vector<const RunColumn*>> chosen = ParseRunColumns(fields_);
    if (!chosen.ok()) return Fail("runs list", chosen.status());
    columns = *std::move(chosen);
  }
  // --all reads a page at a time, so that a ledger of millions of runs is never held at once.
  constexpr int kAllPage = 1000;
  filter.limit = all_ ? kAllPage : limit_;
  TidyLedgerForListing(LedgerPath(config), config.runs, filter.stage,
                       std::cerr);  // runs of dead launchers
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return Fail("runs list", ledger.status());
  JsonArrayWriter json(std::cout);
  RunsTableWriter table(config.runs, std::move(columns));
  int shown = 0;
  for (;;) {
    absl::StatusOr<RunPage> page = (*ledger)->ListPage(filter);
    if (!page.ok()) return Fail("runs list", page.status());
    for (const RunRecord& r : page->runs) {
      if (json_) json.Add(RunToJson(r, config.runs));
    }
    if (!json_ && !page->runs.empty()) std::cout << table.Page(page->runs);
    shown += page->runs.size();
    if (!page->more) break;
    if (!all_) {
      std::cerr << "stagewatch runs list: more runs match than the " << shown
                << " shown (the newest); see more with --limit N, or all with --all\n";
      break;
    }
    filter.before = page->runs.back().start.id;
  }
  if (json_) {
    json.Close();
  } else if (shown == 0) {
    std::cout << "no runs\n";
  }
  return 0;
}

int RunsCli::Show(const Config& config) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return Fail("runs show", ledger.status());
  absl::StatusOr<RunRecord> run = GetRunOrExplain(**ledger, show_id_);
  if (!run.ok()) return Fail("runs show", run.status());
  absl::StatusOr<BaselineComparison> baseline = CompareRunWithBaseline(**ledger, *run, config.runs);
  if (!baseline.ok()) return Fail("runs show", baseline.status());
  if (follow_) {
    absl::Status followed = FollowRun(**ledger, show_id_, config.runs, std::cout);
    return followed.ok() ? 0 : Fail("runs show", followed);
  }
  if (json_) {
    nlohmann::json j = RunToJson(*run, config.runs);
    j["baseline"] = baseline->ToJson();
    std::cout << JsonText(j, 2) << "\n";
  } else {
    std::cout << RunDetails(*run, config.runs) << BaselineDetails(*run, *baseline);
  }
  return 0;
}

int RunsCli::Advise(const Config& config) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger =
      OpenExistingLedger(LedgerPath(config), config.runs);
  if (!ledger.ok()) return Fail("advise", ledger.status());
  RunFilter filter;
  filter.stage = stage_;
  filter.limit = config.runs.advise.max_runs + 1000;  // open runs are skipped
  absl::StatusOr<std::vector<RunRecord>> runs = (*ledger)->List(filter);
  if (!runs.ok()) return Fail("advise", runs.status());
  // Where the runs ran: from the ledger, against this host's nodes (none readable: no advice).
  absl::StatusOr<NumaTopology> topology = ReadNumaTopology();
  const std::optional<PinningAdvice> pinning =
      topology.ok() ? AdvisePinning(stage_, *runs, *topology) : std::nullopt;
  const Advice advice = AdviseLimits(stage_, *std::move(runs), config.runs);
  if (!advise_format_.empty()) {
    if (!advice.enough_runs) return Fail("advise", absl::FailedPreconditionError(
                                                      advice.stage + ": " + advice.not_enough));
    std::cout << FormatAdvice(advice, *ParseAdviseFormat(advise_format_));
  } else if (json_) {
    nlohmann::json j = AdviceToJson(advice);
    if (advice.enough_runs) j["bounds"] = BoundsToJson(BoundsOf(advice));
    j["pinning"] = pinning ? nlohmann::json{{"cpu_node", pinning->cpu_node},
                                            {"cpu_share", pinning->cpu_share},
                                            {"memory_node", pinning->memory_node},
                                            {"memory_share", pinning->memory_share},
                                            {"cpuset_cpus", pinning->cpuset_cpus},
                                            {"cpuset_mems", pinning->cpuset_mems},
                                            {"text", pinning->text}}
                           : nlohmann::json(nullptr);
    std::cout << JsonText(j, 2) << "\n";
  } else {
    std::cout << AdviceText(advice);
    if (advice.enough_runs) std::cout << BoundsText(BoundsOf(advice));
    if (pinning) std::cout << pinning->text << "\n";
  }
  return 0;
}

}  // namespace stagewatch
