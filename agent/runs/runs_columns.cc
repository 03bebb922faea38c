#include "runs/runs_columns.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/run_efficiency.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch {
namespace {

template <typename T, typename F>
std::string OrDash(const std::optional<T>& v, F format) {
  return v ? format(*v) : "-";
}

std::string Percent(const std::optional<double>& share) {
  return OrDash(share, [](double s) { return absl::StrFormat("%.1f%%", s * 100); });
}

const CgroupFacts* Facts(const RunRecord& r) { return r.end ? &r.end->facts : nullptr; }

std::vector<RunColumn> MakeColumns() {
  using R = const RunRecord&;
  using V = const Verdict&;
  return {
      {"id", "ID", [](R r, V) { return r.start.id; }},
      {"stage", "STAGE", [](R r, V) { return r.start.stage; }},
      {"pipeline", "PIPELINE", [](R r, V) { return r.start.pipeline.empty() ? "-" : r.start.pipeline; }},
      {"user", "USER", [](R r, V) { return r.start.user.empty() ? "-" : r.start.user; }},
      {"host", "HOST", [](R r, V) { return r.start.host.empty() ? "-" : r.start.host; }},
      {"source", "SOURCE", [](R r, V) { return std::string(RunSourceName(r.start.source)); }},
      {"command", "COMMAND", [](R r, V) { return absl::StrJoin(r.start.command, " "); }},
      {"start", "START", [](R r, V) { return FormatRfc3339(r.start.start); }},
      {"end", "END", [](R r, V) { return r.end ? FormatRfc3339(r.end->end) : "-"; }},
      {"wall", "WALL", [](R r, V) {
         return OrDash(r.Wall(), [](absl::Duration d) { return FormatSeconds(absl::ToDoubleSeconds(d)); });
       }},
      {"ended", "ENDED", [](R r, V) -> std::string {
         if (!r.end) return "-";
         if (r.end->signal) return SignalName(*r.end->signal);
         return r.end->exit_code ? absl::StrCat("exit ", *r.end->exit_code) : "-";
       }},
      {"peak", "PEAK", [](R r, V) {
         return Facts(r) ? OrDash(Facts(r)->memory_peak_bytes, [](uint64_t b) { return FormatBytes(b); }) : "-";
       }},
      {"limit", "LIMIT", [](R r, V) {
         return Facts(r) ? OrDash(Facts(r)->memory_limit_bytes, [](uint64_t b) { return FormatBytes(b); }) : "-";
       }},
      {"peak_limit", "PEAK / LIMIT", [](R r, V) { return PeakOverLimit(r); }},
      {"cpu", "CPU", [](R r, V) {
         return Facts(r) ? OrDash(Facts(r)->cpu_seconds, [](double s) { return FormatSeconds(s); }) : "-";
       }},
      {"cpu_eff", "CPU EFF", [](R r, V) { return Percent(EfficiencyOf(r, OnlineCpuCount()).cpu); }},
      {"mem_eff", "MEM EFF", [](R r, V) { return Percent(EfficiencyOf(r, OnlineCpuCount()).memory); }},
      {"oom_kills", "OOM", [](R r, V) -> std::string {
         const auto kernel = Facts(r) ? Facts(r)->oom_kills_kernel : std::nullopt;
         if (!kernel && !r.agent.oom_kills_userspace) return "-";
         return absl::StrCat(kernel.value_or(0) + r.agent.oom_kills_userspace.value_or(0));
       }},
      {"verdict", "VERDICT", [](R, V v) { return std::string(VerdictName(v.kind)); }},
      {"why", "WHY", [](R, V v) { return v.reasons.empty() ? "" : v.reasons.front().text; }},
  };
}

}  // namespace

const std::vector<RunColumn>& AllRunColumns() {
  static const std::vector<RunColumn> columns = MakeColumns();
  return columns;
}

std::vector<const RunColumn*> DefaultRunColumns() {
  return *ParseRunColumns("id,stage,start,wall,ended,peak_limit,verdict,why");
}

absl::StatusOr<std::vector<const RunColumn*>> ParseRunColumns(std::string_view list) {
  std::vector<const RunColumn*> out;
  for (std::string_view name : SplitNonEmpty(list, ',')) {
    const RunColumn* found = nullptr;
    for (const RunColumn& c : AllRunColumns()) {
      if (c.name == name) found = &c;
    }
    if (!found) {
      std::vector<std::string> names;
      for (const RunColumn& c : AllRunColumns()) names.push_back(c.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "-o/--fields: no column \"", ToAbsl(name), "\"; the columns are ",
          absl::StrJoin(names, ",")));
    }
    out.push_back(found);
  }
  if (out.empty()) return absl::InvalidArgumentError("-o/--fields: name at least one column");
  return out;
}

std::string PeakOverLimit(const RunRecord& r) {
  if (!r.end || !r.end->facts.memory_peak_bytes) return "-";
  const CgroupFacts& f = r.end->facts;
  return f.memory_limit_bytes ? absl::StrCat(FormatBytes(*f.memory_peak_bytes), " / ",
                                             FormatBytes(*f.memory_limit_bytes))
                              : FormatBytes(*f.memory_peak_bytes);
}

}  // namespace stagewatch
