#include "runs/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/cgroup_control.h"
#include "cgroup/layout.h"
#include "config/config_validate.h"
#include "runs/agent_presence.h"
#include "runs/baseline_comparison.h"
#include "runs/ledger.h"
#include "runs/orphan_runs.h"
#include "runs/pending_ends.h"
#include "runs/pipeline_run.h"
#include "runs/results_directory.h"
#include "runs/run_cgroup.h"
#include "runs/run_facts.h"
#include "runs/run_id.h"
#include "runs/run_owner.h"
#include "runs/run_results.h"
#include "runs/terminal_text.h"
#include "runs/verdict.h"
#include "units.h"

namespace stagewatch {
namespace {

// What the child reports through its close-on-exec pipe when it fails before exec succeeds.
struct ChildFailure {
  int step;  // 1: joining the cgroup, 2: exec
  int error;
};

sigset_t ForwardedSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, sig);
  return set;
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void RunChild(const std::vector<std::string>& procs_files, char* const argv[],
                           char* const envp[], const sigset_t& old_mask, int report_fd) {
  if (const int error = JoinCgroupsAfterFork(procs_files); error != 0) {
    ChildFailure f{1, error};
    (void)!write(report_fd, &f, sizeof f);
    _exit(126);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  execvpe(argv[0], argv, envp);
  ChildFailure f{2, errno};
  (void)!write(report_fd, &f, sizeof f);
  _exit(f.error == ENOENT ? 127 : 126);
}

// Passes a signal sent to the launcher on to every process of the run: a grandchild under
// `sh -c` gets it too, and can end cleanly before anything is SIGKILLed at cleanup.
void Forward(pid_t child, const RunCgroup& cgroup, int sig) {
  const std::vector<pid_t> sent = cgroup.Signal(sig);
  if (std::find(sent.begin(), sent.end(), child) == sent.end()) kill(child, sig);
}

// Waits for `child`, passing SIGINT, SIGTERM, SIGHUP and SIGQUIT on to the run's processes,
// and reaping the orphans it leaves (the launcher is their subreaper). Once the command has
// exited, the run's other processes have kSignalGrace to end if a signal was passed on to them.
// Returns the command's wait status.
int WaitForCommand(pid_t child, const RunCgroup& cgroup, const sigset_t& signals,
                   std::set<int>& requested) {
  std::optional<int> status;
  bool forwarded = false;
  absl::Time grace_ends;
  for (;;) {
    siginfo_t info;
    // SIGCHLDs coalesce, and leftovers exiting send none: poll as well.
    const timespec poll = status ? timespec{0, 20'000'000} : timespec{1, 0};
    const int sig = sigtimedwait(&signals, &info, &poll);
    if (sig > 0 && sig != SIGCHLD) {
      requested.insert(sig);
      // A terminal sends SIGINT to its whole foreground group, the command included already.
      if (info.si_code != SI_KERNEL) {
        Forward(child, cgroup, sig);
        forwarded = true;
      }
      continue;
    }
    int wstatus = 0;
    for (pid_t pid; (pid = waitpid(-1, &wstatus, WNOHANG)) > 0;) {
      if (pid != child) continue;
      status = wstatus;
      grace_ends = absl::Now() + kSignalGrace;
    }
    if (status && (!forwarded || absl::Now() >= grace_ends || cgroup.HoldsNoTask())) {
      return *status;
    }
  }
}

// The run's row for the verdict printed at the end. An agent watching the ledger adds what only
// it sees (OOM victims, run-queue wait, preemptors) when the run's cgroup goes, a moment after
// the launcher removed it: wait for that, within o.agent_facts_wait.
absl::StatusOr<std::optional<RunRecord>> RowWithAgentEndFacts(Ledger& ledger,
                                                              const std::string& id,
                                                              const LaunchOptions& o) {
  const bool agent = AgentPresence::Announced(o.ledger_path);
  const absl::Time deadline = absl::Now() + o.agent_facts_wait;
  for (;;) {
    absl::StatusOr<std::optional<RunRecord>> r = ledger.Get(id);
    if (!agent || !r.ok() || !*r || (*r)->agent.saw_end || absl::Now() >= deadline) return r;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

// Refuses a --memory-high under kMinMemoryHighBytes, before anything is made.
absl::Status CheckMemoryHigh(const RunLimits& limits) {
  if (!limits.memory_high_bytes || *limits.memory_high_bytes >= kMinMemoryHighBytes) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "--memory-high %s is below %s: under it the kernel throttles nearly every allocation of "
      "the command, which then crawls without ever being killed; ask for %dM or more, or use "
      "--memory-max for a hard cap (the command is killed when it needs more)",
      FormatBytes(*limits.memory_high_bytes), FormatBytes(kMinMemoryHighBytes),
      kMinMemoryHighBytes >> 20));
}

// Before a run starts: records the ends kept while the ledger could not take them, and (with
// no agent to do it) closes the runs of the stage whose launcher died.
void TidyBeforeRun(Ledger& ledger, const CgroupLayout& layout, const std::string& stage,
                   std::ostream& log) {
  for (const std::string& recorded : ImportPendingEnds(ledger, false).recorded) {
    log << absl::StrFormat("stagewatch: recorded the end of run %s, kept while the ledger could "
                           "not take it\n", recorded);
  }
  if (!AgentPresence::Announced(ledger.path())) {
    CloseRunsOfDeadLaunchers(ledger, layout, stage, log);
  }
}

// Writes the run's end; where the ledger cannot take it (a full disk), keeps it in the room
// reserved at the start, for the agent or the next `stagewatch` to record. True when recorded.
bool RecordEnd(Ledger& ledger, const std::string& id, const RunEnd& end, std::ostream& log) {
  absl::Status s = ledger.EndRun(id, end);
  if (s.ok()) {
    DropPendingEnd(ledger.path(), id);
    return true;
  }
  if (absl::IsFailedPrecondition(s)) {  // someone closed it meanwhile
    log << "stagewatch: the run's end is not recorded: " << s.message() << "\n";
    DropPendingEnd(ledger.path(), id);
    return false;
  }
  absl::StatusOr<std::string> kept = KeepPendingEnd(ledger.path(), id, end);
  if (kept.ok()) {
    log << absl::StrFormat(
        "stagewatch: the run's end is not recorded in the ledger yet (%s); it is kept in %s, and "
        "the agent (within a second), the next `stagewatch run` or `stagewatch runs list` "
        "records it there\n", s.message(), *kept);
  } else {
    log << absl::StrFormat(
        "stagewatch: the run's end is not recorded (%s), and cannot be kept either (%s): it "
        "ended %s with %s\n", s.message(), kept.status().message(), FormatRfc3339(end.end),
        end.signal ? absl::StrCat("signal ", *end.signal)
                   : absl::StrCat("exit code ", end.exit_code.value_or(-1)));
  }
  return false;
}

absl::Status CheckPipelineFlags(const LaunchOptions& o) {
  if (o.pipeline.empty()) {
    if (o.pipeline_run.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "--pipeline-run needs --pipeline (or STAGEWATCH_PIPELINE): the pipeline it is a run of");
  }
  if (absl::Status s = CheckPipelineName(o.pipeline); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--pipeline: ", s.message()));
  }
  if (o.pipeline_run.empty()) return absl::OkStatus();
  if (absl::Status s = CheckPipelineRunId(o.pipeline_run); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--pipeline-run: ", s.message()));
  }
  return absl::OkStatus();
}

// The launcher's environment for the command, with the run's own variables set.
std::vector<std::string> CommandEnvironment(const LaunchOptions& o, const std::string& id,
                                            const std::string& results_file) {
  const std::map<std::string, std::string> own = {
      {"STAGEWATCH_RUN_ID", id},
      {"STAGEWATCH_STAGE", o.stage},
      {"STAGEWATCH_PIPELINE", o.pipeline},
      {"STAGEWATCH_PIPELINE_RUN", o.pipeline_run},
      {"STAGEWATCH_RESULTS", results_file},
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!own.count(std::string(entry.substr(0, entry.find('='))))) env.emplace_back(entry);
  }
  for (const auto& [name, value] : own) {
    if (!value.empty()) env.push_back(absl::StrCat(name, "=", value));
  }
  return env;
}

// What the command wrote to its results file, into the run's row. Bad entries are skipped with
// a line each; results the ledger cannot take are printed, so they are not lost.
void RecordResults(Ledger& ledger, const std::string& id, const std::string& file,
                   std::ostream& log) {
  absl::StatusOr<ParsedResults> parsed = ReadResultsFile(file);
  if (absl::IsNotFound(parsed.status())) return;
  if (!parsed.ok()) {
    log << "stagewatch: results not recorded: " << parsed.status().message() << "\n";
    return;
  }
  for (const std::string& p : parsed->problems) {
    log << "stagewatch: results: " << TerminalText(p) << " (skipped)\n";
  }
  if (parsed->values.empty()) return;
  if (absl::Status s = ledger.AddResults(id, parsed->values); !s.ok()) {
    log << "stagewatch: results not recorded (" << s.message()
        << "); record them later with: stagewatch results " << id;
    for (const auto& [name, value] : parsed->values) log << " " << name << "=" << value;
    log << "\n";
  }
}

// The verdict of the ended run `r`, against its baseline.
std::string VerdictLine(Ledger& ledger, const RunRecord& r, const RunsConfig& runs) {
  const Verdict v = JudgeRun(r, runs);
  absl::StatusOr<std::vector<RunRecord>> candidates =
      ledger.CleanRunsBefore(r.start, runs.baseline_runs);
  if (!candidates.ok()) return v.Summary();
  return VerdictWithBaseline(v, CompareWithBaseline(r, *candidates, runs.baseline_runs),
                             r.start.stage);
}

}  // namespace

absl::StatusOr<int> LaunchRun(const LaunchOptions& o, std::ostream& log) {
  // ---- everything that can be wrong is checked before the command starts ----
  if (absl::Status s = config_internal::CheckStageName(o.stage); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--stage: ", s.message()));
  }
  if (o.command.empty()) {
    return absl::InvalidArgumentError("no command to run; write it after --, e.g. "
                                      "stagewatch run --stage validate -- python3 validate.py");
  }
  if (absl::Status s = CheckMemoryHigh(o.limits); !s.ok()) return s;
  if (absl::Status s = CheckPipelineFlags(o); !s.ok()) return s;
  const absl::Time start = absl::Now();
  const std::string id = o.run_id.empty() ? NewRunId(start) : o.run_id;
  if (absl::Status s = CheckRunId(id); !s.ok()) return s;

  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(o.ledger_path, o.runs);
  if (!ledger.ok()) return ledger.status();
  absl::StatusOr<std::optional<RunRecord>> existing = (*ledger)->Get(id);
  if (!existing.ok()) return existing.status();
  if (*existing) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "run id \"%s\" is in the ledger \"%s\" already; pick another --run-id, or leave it out to "
        "get a new one", id, o.ledger_path));
  }
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  if (!layout.ok()) return layout.status();
  TidyBeforeRun(**ledger, *layout, o.stage, log);
  // From here on a SIGINT or SIGTERM waits (blocked) until the command runs and is passed on
  // to it, so a signal can never leave the run's cgroup behind.
  const sigset_t signals = ForwardedSignals();
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &signals, &old_mask);
  absl::Cleanup restore_mask = [&] { pthread_sigmask(SIG_SETMASK, &old_mask, nullptr); };
  absl::StatusOr<std::unique_ptr<RunCgroup>> cgroup = RunCgroup::Prepare(
      *layout, {o.discovery_directory, o.stage, id, o.cgroup_parent, o.limits});
  if (!cgroup.ok()) return cgroup.status();

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("pipe2 failed: ", std::strerror(errno)));
  }
  absl::Cleanup close_report = [&] {
    close(report[0]);
    if (report[1] >= 0) close(report[1]);
  };
  // The row first, then the cgroup: a launcher killed at any moment from here on leaves a row
  // for the agent (or the next `stagewatch run`) to close and its cgroup to remove.
  RunStart run{id,      o.stage, o.pipeline, o.pipeline_run, o.command, RunSource::kLauncher,
               (*cgroup)->key_path(), getpid(), start, o.limits};
  run.uid = getuid();
  run.user = UserName(getuid());
  run.host = HostName();
  absl::StatusOr<ResultsDirectory> results = ResultsDirectory::Make(id);
  if (!results.ok()) return results.status();
  if (absl::Status s = (*ledger)->BeginRun(run); !s.ok()) return s;
  if (absl::Status s = (*cgroup)->Make(); !s.ok()) {
    if (absl::Status w = (*ledger)->WithdrawRun(id); !w.ok()) {
      log << "stagewatch: the run that could not start stays in the ledger: " << w.message()
          << "\n";
    }
    return s;
  }
  const std::string& key_path = (*cgroup)->key_path();
  TidyStageCgroups(**ledger, *layout, key_path.substr(0, key_path.rfind('/')), id, log);
  if (absl::Status s = ReservePendingEnd(o.ledger_path, id); !s.ok()) {
    log << "stagewatch: no room reserved for the run's end (" << s.message()
        << "): should the disk fill up meanwhile, its end is not kept\n";
  }

  // ---- the command runs ----
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<char*> argv;
  for (const std::string& arg : o.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> env = CommandEnvironment(o, id, results->file());
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  log << absl::StrFormat("stagewatch: run %s of stage %s starts in cgroup %s\n", id, o.stage,
                         (*cgroup)->key_path())
      << std::flush;
  const pid_t child = fork();
  if (child == 0) {
    RunChild((*cgroup)->procs_files(), argv.data(), envp.data(), old_mask, report[1]);
  }
  close(std::exchange(report[1], -1));
  ChildFailure failure{0, 0};
  const bool failed = child < 0 || read(report[0], &failure, sizeof failure) == sizeof failure;
  std::move(close_report).Invoke();

  RunEnd end;
  std::set<int> requested;
  if (failed) {
    if (child > 0) waitpid(child, nullptr, 0);
    log << absl::StrFormat("stagewatch: cannot %s: %s\n",
                           failure.step == 1 ? "move the command into the run's cgroup"
                                             : absl::StrCat("run \"", o.command[0], "\""),
                           std::strerror(child < 0 ? errno : failure.error));
    end.exit_code = failure.step == 2 && failure.error == ENOENT ? 127 : 126;
    end.end = absl::Now();
  } else {
    Ledger* series_ledger = ledger->get();
    RunSampler sampler((*cgroup)->reader_layout(), o.sample_interval, o.near_limit_fraction,
                       [&](const std::vector<RunSample>& points) {
                         if (absl::Status s = series_ledger->AddSamples(id, points); !s.ok()) {
                           log << "stagewatch: samples not recorded: " << s.message() << "\n";
                         }
                       });
    const int status = WaitForCommand(child, **cgroup, signals, requested);
    end.end = absl::Now();
    const UsageSummary usage = sampler.Stop();
    std::vector<std::string> problems;
    end.facts = ReadCgroupFacts((*cgroup)->reader_layout(), problems);
    MergeUsage(usage, end.facts);
    for (const std::string& p : problems) log << "stagewatch: not measured: " << p << "\n";
    if (WIFSIGNALED(status)) {
      end.signal = WTERMSIG(status);
      end.signal_requested = requested.count(*end.signal) > 0;
    } else {
      end.exit_code = WEXITSTATUS(status);
    }
  }
  if (absl::Status s = (*cgroup)->Remove(); !s.ok()) log << "stagewatch: " << s.message() << "\n";
  // A ledger removed while the command ran: the end goes to the file at the path now.
  if (absl::StatusOr<bool> reopened = (*ledger)->ReopenIfReplaced({run}); !reopened.ok()) {
    log << "stagewatch: " << reopened.status().message() << "\n";
  } else if (*reopened) {
    log << "stagewatch: the ledger was removed or replaced while the run ran; the run is "
           "recorded in the new " << o.ledger_path << "\n";
  }
  RecordResults(**ledger, id, results->file(), log);
  if (!RecordEnd(**ledger, id, end, log)) {
    // Kept or lost, as RecordEnd said: no verdict to print.
  } else if (absl::StatusOr<std::optional<RunRecord>> r = RowWithAgentEndFacts(**ledger, id, o);
             r.ok() && *r) {
    const std::string ledger_flag =
        o.ledger_path == o.runs.ledger_path ? "" : absl::StrCat(" --ledger.path ", o.ledger_path);
    log << absl::StrFormat("stagewatch: run %s of %s %s\n  details: stagewatch runs show%s %s\n",
                           id, o.stage, TerminalText(VerdictLine(**ledger, **r, o.runs)),
                           ledger_flag, id);
  }
  return end.signal ? 128 + *end.signal : *end.exit_code;
}

}  // namespace stagewatch
