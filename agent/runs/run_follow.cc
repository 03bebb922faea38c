#include "runs/run_follow.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runs/runs_report.h"
#include "units.h"

namespace stagewatch {

std::string SampleLine(const RunSample& s, absl::Time run_start) {
  std::string line = absl::StrFormat("+%-8s", FormatSeconds(absl::ToDoubleSeconds(s.at - run_start)));
  if (s.memory_bytes) {
    absl::StrAppend(&line, "  memory ", FormatBytes(*s.memory_bytes));
    if (s.memory_limit_bytes) absl::StrAppend(&line, " / ", FormatBytes(*s.memory_limit_bytes));
  }
  if (s.cpu_cores) absl::StrAppend(&line, absl::StrFormat("  cpu %.2f CPUs", *s.cpu_cores));
  if (s.memory_pressure || s.cpu_pressure) {
    absl::StrAppend(&line, "  stalled");
    if (s.memory_pressure) absl::StrAppend(&line, absl::StrFormat(" mem %.0f%%", *s.memory_pressure * 100));
    if (s.cpu_pressure) absl::StrAppend(&line, absl::StrFormat(" cpu %.0f%%", *s.cpu_pressure * 100));
  }
  return line;
}

absl::Status FollowRun(Ledger& ledger, const std::string& id, const RunsConfig& config,
                       std::ostream& out, absl::Duration poll) {
  absl::Time shown_until = absl::InfinitePast();
  bool first = true;
  for (;;) {
    // The run before its samples: samples written after this read are shown on the next round.
    absl::StatusOr<std::optional<RunRecord>> run = ledger.Get(id);
    if (!run.ok()) return run.status();
    if (!*run) return absl::NotFoundError(absl::StrCat("no run \"", id, "\" in the ledger"));
    const RunRecord& r = **run;
    if (first) {
      out << "run " << id << " (stage " << r.start.stage << "), started "
          << FormatRfc3339(r.start.start) << "\n";
      first = false;
    }
    absl::StatusOr<std::vector<RunSample>> samples = ledger.Samples(id);
    if (!samples.ok()) return samples.status();
    for (const RunSample& s : *samples) {
      if (s.at <= shown_until) continue;
      out << SampleLine(s, r.start.start) << "\n";
      shown_until = s.at;
    }
    out.flush();
    if (r.end) {
      const std::string details = RunDetails(r, config);
      out << details.substr(0, details.find('\n') + 1);
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(poll));
  }
}

}  // namespace stagewatch
