#include "exporters/pages/runs_pages.h"

#include <cctype>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "config/config_validate.h"
#include "exporters/pages/run_charts.h"
#include "nlohmann/json.hpp"
#include "json_text.h"
#include "runs/run_id.h"
#include "runs/runs_report.h"
#include "runs/verdict.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch::exporters {
namespace {

using nlohmann::json;

constexpr char kHtml[] = "text/html; charset=utf-8";
constexpr char kJson[] = "application/json";
constexpr int kDefaultLimit = 100;
constexpr int kMaxLimit = 1000;

const char kStyle[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    ".verdict{font-size:1.4em;font-weight:bold}.clean{color:#1a7f37}.degraded{color:#9a6700}"
    ".interrupted{color:#cf222e}.unobserved,.running{color:#555}pre{background:#f6f8fa;"
    "padding:8px}";

std::string Page(const std::string& title, const std::string& body) {
  return absl::StrCat("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
                      HtmlEscape(title), "</title><style>", kStyle, "</style></head><body>\n",
                      "<p><a href=\"/\">stagewatch</a> · <a href=\"/runs\">runs</a></p>\n", body,
                      "</body></html>\n");
}

HttpReply Error(bool api, unsigned int status, const std::string& message) {
  if (api) return {status, kJson, JsonText(json{{"error", message}}) + "\n"};
  return {status, kHtml, Page("stagewatch: error", absl::StrCat("<h1>", status, "</h1><p>",
                                                                 HtmlEscape(message), "</p>\n"))};
}

struct ListQuery {
  std::string stage;
  std::string verdict;
  int limit = kDefaultLimit;
  std::string before;  // a run id: the page of runs listed after it
};

// The list's URL with `q`'s parameters and the page after `before`.
std::string ListUrl(const std::string& base, const ListQuery& q, const std::string& before) {
  std::vector<std::string> params;
  if (!q.stage.empty()) params.push_back("stage=" + UrlEncode(q.stage));
  if (!q.verdict.empty()) params.push_back("verdict=" + UrlEncode(q.verdict));
  if (q.limit != kDefaultLimit) params.push_back(absl::StrCat("limit=", q.limit));
  params.push_back("before=" + UrlEncode(before));
  return absl::StrCat(base, "?", absl::StrJoin(params, "&"));
}

// "" when the parameters are good, else what is wrong and what is allowed.
std::string ParseListQuery(const std::map<std::string, std::string>& query, ListQuery& out) {
  static const std::set<std::string> kVerdicts = {"running", "clean", "unobserved", "degraded",
                                                  "interrupted"};
  for (const auto& [key, value] : query) {
    if (key == "stage") {
      if (value.empty()) continue;
      if (absl::Status s = config_internal::CheckStageName(value); !s.ok()) {
        return absl::StrCat("stage: ", s.message());
      }
      out.stage = value;
    } else if (key == "verdict") {
      if (value.empty()) continue;
      if (!kVerdicts.count(value)) {
        return absl::StrCat("verdict \"", value, "\" is not one of ",
                            absl::StrJoin(kVerdicts, ", "));
      }
      out.verdict = value;
    } else if (key == "before") {
      if (value.empty()) continue;
      if (absl::Status s = CheckRunId(value); !s.ok()) return absl::StrCat("before: ", s.message());
      out.before = value;
    } else if (key == "limit") {
      uint64_t n = 0;
      if (!ParseDigits(value, n) || n < 1 || n > kMaxLimit) {
        return absl::StrFormat("limit \"%s\" is not a whole number from 1 to %d", value,
                               kMaxLimit);
      }
      out.limit = int(n);
    } else {
      return absl::StrCat("unknown parameter \"", key, "\"; the run list takes stage, verdict, "
                          "limit and before");
    }
  }
  return "";
}

std::string VerdictSpan(const Verdict& v) {
  const std::string name(VerdictName(v.kind));
  return absl::StrCat("<span class=\"", name, "\">", name, "</span>");
}

std::string RunLink(const std::string& id) {
  return absl::StrCat("<a href=\"/runs/", UrlEncode(id), "\">", HtmlEscape(id), "</a>");
}

std::string ListHtml(const RunPage& page, const RunsConfig& config, const ListQuery& q) {
  const std::vector<RunRecord>& runs = page.runs;
  std::string body = "<h1>Runs</h1>\n<form method=\"get\" action=\"/runs\">Stage "
                     "<input name=\"stage\" value=\"" + HtmlEscape(q.stage) + "\"> Verdict "
                     "<select name=\"verdict\"><option value=\"\">any</option>";
  for (const char* v : {"clean", "degraded", "interrupted", "unobserved", "running"}) {
    absl::StrAppend(&body, "<option", q.verdict == v ? " selected" : "", ">", v, "</option>");
  }
  absl::StrAppend(&body, "</select> <button>Filter</button></form>\n");
  if (runs.empty()) {
    absl::StrAppend(&body, "<p>No runs match.</p>\n");
    return Page("stagewatch: runs", body);
  }
  absl::StrAppend(&body, "<table><tr><th>Run</th><th>Stage</th><th>Started</th><th>Wall</th>"
                         "<th>Verdict</th><th>Why</th><th>Peak memory</th></tr>\n");
  for (const RunRecord& r : runs) {
    const Verdict v = JudgeRun(r, config);
    const auto wall = r.Wall();
    const auto& peak = r.end ? r.end->facts.memory_peak_bytes : std::nullopt;
    absl::StrAppend(
        &body, "<tr><td>", RunLink(r.start.id), "</td><td><a href=\"/runs?stage=",
        UrlEncode(r.start.stage), "\">", HtmlEscape(r.start.stage), "</a></td><td>",
        FormatRfc3339(r.start.start), "</td><td>",
        wall ? FormatSeconds(absl::ToDoubleSeconds(*wall)) : "-", "</td><td>", VerdictSpan(v),
        "</td><td>", v.reasons.empty() ? "" : HtmlEscape(v.reasons.front().text), "</td><td>",
        peak ? FormatBytes(*peak) : "-", "</td></tr>\n");
  }
  absl::StrAppend(&body, "</table>\n");
  if (page.more) {
    absl::StrAppend(&body, "<p id=\"more\">More runs match than these ", runs.size(),
                    ": <a href=\"", HtmlEscape(ListUrl("/runs", q, runs.back().start.id)),
                    "\">next page</a> (older runs)</p>\n");
  }
  return Page("stagewatch: runs", body);
}

constexpr double kMiB = 1 << 20;  // the memory chart is drawn in MiB, so its steps are round
std::string MiB(double mib) { return absl::StrFormat("%.0f MiB", mib); }
std::string Cores(double v) { return absl::StrFormat("%.2f cores", v); }
std::string Percent(double v) { return absl::StrFormat("%.0f %%", v * 100); }

std::vector<Chart> RunCharts(const RunRecord& r, const std::vector<RunSample>& samples) {
  const absl::Time start = r.start.start;
  const absl::Time end = r.end ? r.end->end : (samples.empty() ? start : samples.back().at);
  const double duration = absl::ToDoubleSeconds(end - start);
  auto at = [&](absl::Time t) { return absl::ToDoubleSeconds(t - start); };
  ChartLine memory{"memory", "#0969da"}, limit{"limit", "#cf222e", true},
      cpu{"CPU", "#8250df"}, memory_psi{"memory stalled", "#bf3989"},
      cpu_psi{"CPU stalled", "#1a7f37"};
  for (const RunSample& s : samples) {
    const double t = at(s.at);
    if (s.memory_bytes) memory.points.push_back({t, double(*s.memory_bytes) / kMiB});
    if (s.memory_limit_bytes) limit.points.push_back({t, double(*s.memory_limit_bytes) / kMiB});
    if (s.cpu_cores) cpu.points.push_back({t, *s.cpu_cores});
    if (s.memory_pressure) memory_psi.points.push_back({t, *s.memory_pressure});
    if (s.cpu_pressure) cpu_psi.points.push_back({t, *s.cpu_pressure});
  }
  // The kernel's exact peak, which sampling can miss (an allocation that ends in an OOM kill
  // is often quicker than one interval).
  ChartLine peak{"peak (kernel)", "#0969da", true};
  if (r.end && r.end->facts.memory_peak_bytes) {
    const double mib = double(*r.end->facts.memory_peak_bytes) / kMiB;
    peak.points = {{0, mib}, {duration, mib}};
  }
  std::vector<ChartMark> marks;
  const uint64_t ooms = (r.end ? r.end->facts.oom_kills_kernel.value_or(0) : 0) +
                        r.agent.oom_kills_userspace.value_or(0);
  // The ledger has no time for an OOM kill; the kill ends the run, so it is marked at the end.
  if (ooms > 0 && r.end) {
    marks.push_back({duration, absl::StrFormat("OOM kill ×%d (by the end)", ooms), "#cf222e"});
  }
  for (const RunAnomaly& a : r.agent.anomalies) {
    marks.push_back({at(a.at), absl::StrCat("anomaly: ", a.name), "#9a6700"});
  }
  const double limit_top = double(r.start.limits.memory_max_bytes.value_or(0)) / kMiB;
  return {
      {"Memory usage against its limit", MiB, std::max(1.0, limit_top), duration,
       {memory, peak, limit}, marks},
      {"CPU use", Cores, 0.1, duration, {cpu}, marks},
      {"Pressure: share of time stalled", Percent, 0.05, duration, {memory_psi, cpu_psi}, marks},
  };
}

std::string RunHtml(const RunRecord& r, const RunsConfig& config,
                    const std::vector<RunSample>& samples) {
  const Verdict v = JudgeRun(r, config);
  std::string body = absl::StrCat("<h1>Run ", HtmlEscape(r.start.id), "</h1>\n<p class=\"verdict\" "
                                  "id=\"verdict\">", VerdictSpan(v), "</p>\n");
  if (!v.reasons.empty()) {
    absl::StrAppend(&body, "<ul id=\"reasons\">");
    for (const VerdictReason& reason : v.reasons) {
      absl::StrAppend(&body, "<li>", HtmlEscape(reason.text), "</li>");
    }
    absl::StrAppend(&body, "</ul>\n");
  }
  if (!v.unobserved.empty()) {
    absl::StrAppend(&body, "<p>Not observed (no agent watched): ",
                    HtmlEscape(absl::StrJoin(v.unobserved, ", ")), "</p>\n");
  }
  absl::StrAppendFormat(&body, "<h2>Over the run's time</h2>\n<p>%d samples.</p>\n",
                        samples.size());
  for (const Chart& c : RunCharts(r, samples)) absl::StrAppend(&body, RenderChartSvg(c));
  absl::StrAppend(&body, "<h2>Facts</h2>\n<pre>", HtmlEscape(RunDetails(r, config)), "</pre>\n",
                  "<p><a href=\"/api/v1/runs/", UrlEncode(r.start.id), "\">JSON</a></p>\n");
  return Page(absl::StrCat("stagewatch: run ", r.start.id), body);
}

json SamplesJson(const std::vector<RunSample>& samples) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (const RunSample& s : samples) {
    out.push_back({{"at", FormatRfc3339(s.at)}, {"memory_bytes", opt(s.memory_bytes)},
                   {"memory_limit_bytes", opt(s.memory_limit_bytes)},
                   {"cpu_cores", opt(s.cpu_cores)}, {"memory_pressure", opt(s.memory_pressure)},
                   {"cpu_pressure", opt(s.cpu_pressure)}});
  }
  return out;
}

HttpReply Unavailable(bool api, const absl::Status& s) {
  const bool down = s.code() == absl::StatusCode::kUnavailable;
  return Error(api, down ? 503 : 500, std::string(s.message()));
}

}  // namespace

HttpReply AnswerRunsRequest(RunsSource& source, const RunsConfig& config,
                            const HttpRequest& request) {
  const bool api = request.path.rfind("/api/", 0) == 0;
  const std::string base = api ? "/api/v1/runs" : "/runs";
  std::string id = request.path.size() > base.size() ? request.path.substr(base.size() + 1) : "";
  if (request.path == base || request.path == base + "/") {
    ListQuery q;
    if (std::string problem = ParseListQuery(request.query, q); !problem.empty()) {
      return Error(api, 400, problem);
    }
    RunFilter filter;
    filter.stage = q.stage;
    if (!q.verdict.empty()) filter.verdict = ParseVerdictName(q.verdict);
    filter.before = q.before;
    filter.limit = q.limit;
    absl::StatusOr<RunPage> page = source.List(filter);
    if (absl::IsNotFound(page.status())) {
      return Error(api, 400, absl::StrCat("before: ", page.status().message()));
    }
    if (!page.ok()) return Unavailable(api, page.status());
    if (!api) return {200, kHtml, ListHtml(*page, config, q)};
    json out = json::array();
    for (const RunRecord& r : page->runs) out.push_back(RunToJson(r, config));
    // The cursor of the next page, when more runs match: `before` takes it.
    const json next = page->more ? json(page->runs.back().start.id) : json(nullptr);
    return {200, kJson, JsonText(json{{"runs", out}, {"next_before", next}}) + "\n"};
  }
  if (!request.query.empty()) return Error(api, 400, "a run's page takes no parameters");
  if (absl::Status s = CheckRunId(id); !s.ok()) return Error(api, 400, std::string(s.message()));
  absl::StatusOr<std::optional<RunRecord>> run = source.Get(id);
  if (!run.ok()) return Unavailable(api, run.status());
  if (!*run) {
    return Error(api, 404, absl::StrCat("no run \"", id, "\" in the ledger; see /runs for the "
                                        "runs there are"));
  }
  absl::StatusOr<std::vector<RunSample>> samples = source.Samples(id);
  if (!samples.ok()) return Unavailable(api, samples.status());
  if (!api) return {200, kHtml, RunHtml(**run, config, *samples)};
  json out = RunToJson(**run, config);
  out["samples"] = SamplesJson(*samples);
  return {200, kJson, JsonText(out) + "\n"};
}

std::vector<ExtraHandler> RunsHandlers(RunsSource* source, RunsConfig config) {
  auto answer = [source, config](const HttpRequest& request) {
    return AnswerRunsRequest(*source, config, request);
  };
  std::vector<ExtraHandler> out;
  for (const char* path : {"/runs", "/runs/", "/api/v1/runs", "/api/v1/runs/"}) {
    out.push_back({path, answer});
  }
  return out;
}

}  // namespace stagewatch::exporters
