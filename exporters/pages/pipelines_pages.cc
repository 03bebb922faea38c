#include "exporters/pages/pipelines_pages.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exporters/pages/run_charts.h"
#include "json_text.h"
#include "nlohmann/json.hpp"
#include "runs/pipeline_run.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch::exporters {
namespace {

using nlohmann::json;

constexpr char kHtml[] = "text/html; charset=utf-8";
constexpr char kJson[] = "application/json";
constexpr int kDefaultLimit = 100;
constexpr int kMaxLimit = 1000;

// The timeline: a label column, then the plot; a row per run.
constexpr double kWidth = 1100, kLabelWidth = 210, kRight = 20, kTop = 44, kBottom = 40;
constexpr double kRowHeight = 26, kBarHeight = 18, kStripe = 5;
constexpr int kTicks = 6;

const char kStyle[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    ".verdict{font-size:1.4em;font-weight:bold}.clean{color:#1a7f37}.degraded{color:#9a6700}"
    ".interrupted{color:#cf222e}.unobserved,.running{color:#555}";

// Bars in the verdict's colour (the text colours above, lighter where a bar needs contrast).
std::string VerdictFill(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kClean: return "#2da44e";
    case VerdictKind::kDegraded: return "#d4a72c";
    case VerdictKind::kInterrupted: return "#cf222e";
    case VerdictKind::kUnobserved: return "#8c959f";
    case VerdictKind::kRunning: return "#54aeff";
  }
  return "#8c959f";
}
constexpr char kCpuWaitFill[] = "#8250df";
constexpr char kMemoryStallFill[] = "#bf3989";
constexpr char kKillColor[] = "#82071e";
constexpr char kAnomalyColor[] = "#1f2328";

std::string Page(const std::string& title, const std::string& body) {
  return absl::StrCat("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
                      HtmlEscape(title), "</title><style>", kStyle, "</style></head><body>\n",
                      "<p><a href=\"/\">stagewatch</a> · <a href=\"/runs\">runs</a> · "
                      "<a href=\"/pipelines\">pipelines</a></p>\n", body, "</body></html>\n");
}

HttpReply Error(bool api, unsigned int status, const std::string& message) {
  if (api) return {status, kJson, JsonText(json{{"error", message}}) + "\n"};
  return {status, kHtml, Page("stagewatch: error", absl::StrCat("<h1>", status, "</h1><p>",
                                                                 HtmlEscape(message), "</p>\n"))};
}

HttpReply Unavailable(bool api, const absl::Status& s) {
  if (absl::IsNotFound(s)) return Error(api, 404, std::string(s.message()));
  if (absl::IsFailedPrecondition(s)) {
    return Error(api, 400, absl::StrCat(s.message(), " (here: ?pipeline=NAME)"));
  }
  return Error(api, s.code() == absl::StatusCode::kUnavailable ? 503 : 500,
               std::string(s.message()));
}

std::string VerdictSpan(VerdictKind kind) {
  const std::string name(VerdictName(kind));
  return absl::StrCat("<span class=\"", name, "\">", name, "</span>");
}

std::string PipelineRunUrl(const std::string& pipeline, const std::string& id) {
  return absl::StrCat("/pipelines/", UrlEncode(id), "?pipeline=", UrlEncode(pipeline));
}

std::string RunLink(const std::string& id) {
  return absl::StrCat("<a href=\"/runs/", UrlEncode(id), "\">", HtmlEscape(id), "</a>");
}

std::string Seconds(absl::Duration d) { return FormatSeconds(absl::ToDoubleSeconds(d)); }

struct ListQuery {
  std::string pipeline;
  int limit = kDefaultLimit;
  std::optional<std::pair<std::string, std::string>> before;  // pipeline, pipeline run
};

// "" when the parameters are good, else what is wrong and what is allowed.
std::string ParseListQuery(const std::map<std::string, std::string>& query, ListQuery& out) {
  for (const auto& [key, value] : query) {
    if (key == "pipeline") {
      if (value.empty()) continue;
      if (absl::Status s = CheckPipelineName(value); !s.ok()) {
        return absl::StrCat("pipeline: ", s.message());
      }
      out.pipeline = value;
    } else if (key == "before") {
      if (value.empty()) continue;
      const size_t slash = value.find('/');
      const std::string pipeline = value.substr(0, slash);
      const std::string run = slash == std::string::npos ? "" : value.substr(slash + 1);
      if (!CheckPipelineName(pipeline).ok() || !CheckPipelineRunId(run).ok()) {
        return absl::StrCat("before \"", value, "\" is not PIPELINE/PIPELINE_RUN, as a list's "
                            "next_before gives it");
      }
      out.before = {{pipeline, run}};
    } else if (key == "limit") {
      uint64_t n = 0;
      if (!ParseDigits(value, n) || n < 1 || n > kMaxLimit) {
        return absl::StrFormat("limit \"%s\" is not a whole number from 1 to %d", value,
                               kMaxLimit);
      }
      out.limit = int(n);
    } else {
      return absl::StrCat("unknown parameter \"", key, "\"; the pipeline list takes pipeline, "
                          "limit and before");
    }
  }
  return "";
}

std::string NextPageUrl(const std::string& base, const ListQuery& q,
                        const PipelineRunSummary& last) {
  std::vector<std::string> params;
  if (!q.pipeline.empty()) params.push_back("pipeline=" + UrlEncode(q.pipeline));
  if (q.limit != kDefaultLimit) params.push_back(absl::StrCat("limit=", q.limit));
  params.push_back("before=" + UrlEncode(last.pipeline + "/" + last.pipeline_run));
  return absl::StrCat(base, "?", absl::StrJoin(params, "&"));
}

std::string ListHtml(const PipelineRunPage& page, const ListQuery& q) {
  std::string body = absl::StrCat(
      "<h1>Pipeline runs</h1>\n<form method=\"get\" action=\"/pipelines\">Pipeline "
      "<input name=\"pipeline\" value=\"", HtmlEscape(q.pipeline), "\"> <button>Filter</button>"
      "</form>\n");
  if (page.runs.empty()) {
    absl::StrAppend(&body, "<p>No pipeline runs. Runs join one with <code>stagewatch run "
                           "--pipeline P --pipeline-run ID</code>, or by night for stages with "
                           "a pipeline.</p>\n");
    return Page("stagewatch: pipelines", body);
  }
  absl::StrAppend(&body, "<table><tr><th>Pipeline run</th><th>Pipeline</th><th>Started</th>"
                         "<th>Wall</th><th>Runs</th><th>Verdict</th></tr>\n");
  for (const PipelineRunSummary& p : page.runs) {
    const bool ended = p.open_runs == 0 && p.last_end;
    absl::StrAppend(
        &body, "<tr><td><a href=\"", HtmlEscape(PipelineRunUrl(p.pipeline, p.pipeline_run)),
        "\">", HtmlEscape(p.pipeline_run), "</a></td><td><a href=\"/pipelines?pipeline=",
        UrlEncode(p.pipeline), "\">", HtmlEscape(p.pipeline), "</a></td><td>",
        FormatRfc3339(p.first_start), "</td><td>",
        ended ? Seconds(*p.last_end - p.first_start) : "-", "</td><td>", p.runs,
        p.open_runs > 0 ? absl::StrCat(" (", p.open_runs, " open)") : "", "</td><td>",
        VerdictSpan(p.verdict), "</td></tr>\n");
  }
  absl::StrAppend(&body, "</table>\n");
  if (page.more) {
    absl::StrAppend(&body, "<p id=\"more\">More pipeline runs than these ", page.runs.size(),
                    ": <a href=\"", HtmlEscape(NextPageUrl("/pipelines", q, page.runs.back())),
                    "\">next page</a> (older)</p>\n");
  }
  return Page("stagewatch: pipelines", body);
}

// The runs' bars on one time axis, from the first start to the last end (or now).
class Timeline {
 public:
  Timeline(const PipelineRunView& view, absl::Time now) : view_(view), now_(now) {
    const PipelineRunReport& r = view.report;
    from_ = r.first_start;
    to_ = r.last_end.value_or(std::max(now, from_));
    for (const PipelineRunMember& m : r.runs) to_ = std::max(to_, End(m));
    plot_width_ = kWidth - kLabelWidth - kRight;
  }

  std::string Svg() const {
    const PipelineRunReport& r = view_.report;
    const double height = kTop + kRowHeight * double(r.runs.size()) + kBottom;
    std::string svg = absl::StrFormat(
        "<svg id=\"timeline\" class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\" aria-label=\"the "
        "pipeline run's runs over time\" data-from=\"%s\" data-to=\"%s\" data-plot-left=\"%g\" "
        "data-plot-width=\"%g\">\n",
        kWidth, height, kWidth, height, FormatRfc3339(from_), FormatRfc3339(to_), kLabelWidth,
        plot_width_);
    svg += Legend();
    svg += Axis(height);
    for (size_t i = 0; i < r.runs.size(); ++i) svg += Row(r.runs[i], kTop + kRowHeight * i);
    svg += "</svg>\n";
    return svg;
  }

 private:
  absl::Time End(const PipelineRunMember& m) const {
    return m.run.end ? m.run.end->end : std::max(now_, m.run.start.start);
  }
  double X(absl::Time t) const {
    const double span = std::max(absl::ToDoubleSeconds(to_ - from_), 1e-3);
    const double at = std::clamp(absl::ToDoubleSeconds(t - from_) / span, 0.0, 1.0);
    return kLabelWidth + plot_width_ * at;
  }

  std::string Legend() const {
    std::string out;
    double x = kLabelWidth;
    auto entry = [&](const std::string& color, const std::string& text) {
      absl::StrAppendFormat(&out, "<rect x=\"%g\" y=\"6\" width=\"10\" height=\"10\" "
                                  "fill=\"%s\"/><text x=\"%g\" y=\"15\" font-size=\"11\">%s"
                                  "</text>\n", x, color, x + 13, HtmlEscape(text));
      x += 26 + 6.5 * double(text.size());
    };
    for (VerdictKind k : {VerdictKind::kClean, VerdictKind::kDegraded, VerdictKind::kInterrupted,
                          VerdictKind::kUnobserved, VerdictKind::kRunning}) {
      entry(VerdictFill(k), std::string(VerdictName(k)));
    }
    entry(kCpuWaitFill, absl::StrFormat("waiting for CPU (> %.0f%%)", kStallShare * 100));
    entry(kMemoryStallFill, absl::StrFormat("stalled on memory (> %.0f%%)", kStallShare * 100));
    return out;
  }

  // Ticks in time since the first start, and the usual end and the deadline where they fall.
  std::string Axis(double height) const {
    const double bottom = height - kBottom;
    std::string out;
    const double span = absl::ToDoubleSeconds(to_ - from_);
    const double step = NiceStep(std::max(span, 1e-3), kTicks);
    for (double t = 0; t <= span + step / 1e6; t += step) {
      const double x = X(from_ + absl::Seconds(t));
      absl::StrAppendFormat(&out, "<line x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" y2=\"%g\" "
                                  "stroke=\"#ddd\"/><text x=\"%.2f\" y=\"%g\" "
                                  "text-anchor=\"middle\" font-size=\"11\">%s</text>\n",
                            x, kTop - 4, x, bottom, x, bottom + 14, TimeLabel(t));
    }
    absl::StrAppendFormat(&out, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" "
                                "font-size=\"11\">time since the first run started (%s)</text>\n",
                          kLabelWidth + plot_width_ / 2, height - 6, FormatRfc3339(from_));
    const PipelineRunReport& r = view_.report;
    if (r.baseline.median_wall_seconds) {
      Marker(out, from_ + absl::Seconds(*r.baseline.median_wall_seconds), bottom, "#57606a",
             "usual end", absl::StrCat("the usual end: ", r.WallText()));
    }
    if (r.deadline) {
      Marker(out, r.deadline->at, bottom, "#cf222e", "deadline",
             absl::StrCat("deadline ", FormatTimeOfDay(r.deadline->time_of_day), " (",
                          FormatRfc3339(r.deadline->at), ")"));
    }
    return out;
  }

  // A dashed vertical line across the rows at `at`, when it falls on the axis.
  void Marker(std::string& out, absl::Time at, double bottom, const std::string& color,
              const std::string& label, const std::string& title) const {
    if (at < from_ || at > to_) return;
    const double x = X(at);
    absl::StrAppendFormat(&out, "<g class=\"marker\"><line x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" "
                                "y2=\"%g\" stroke=\"%s\" stroke-width=\"2\" "
                                "stroke-dasharray=\"5 4\"/><text x=\"%.2f\" y=\"%g\" "
                                "font-size=\"11\" fill=\"%s\" text-anchor=\"end\">%s</text>"
                                "<title>%s</title></g>\n",
                          x, kTop - 4, x, bottom, color, x - 3, kTop - 8, color,
                          HtmlEscape(label), HtmlEscape(title));
  }

  // A stripe over each stretch of `spans` with `flag`, stretches less than a pixel apart drawn
  // as one: a long night's page stays small, whatever the runs' number of points.
  void Stripes(std::string& out, const std::vector<PressureSpan>& spans, bool PressureSpan::*flag,
               const char* cls, const char* title, double y, const char* fill) const {
    std::optional<std::pair<double, double>> open;  // x from, x to
    auto emit = [&] {
      absl::StrAppendFormat(&out, "<rect class=\"%s\" x=\"%.2f\" y=\"%g\" width=\"%.2f\" "
                                  "height=\"%g\" fill=\"%s\"><title>%s</title></rect>",
                            cls, open->first, y, std::max(open->second - open->first, 1.0),
                            kStripe, fill, title);
    };
    for (const PressureSpan& s : spans) {
      if (!(s.*flag)) continue;
      const double from = X(s.from), to = X(s.to);
      if (open && from <= open->second + 1) {
        open->second = std::max(open->second, to);
        continue;
      }
      if (open) emit();
      open = {{from, to}};
    }
    if (open) emit();
  }

  std::string Row(const PipelineRunMember& m, double y) const {
    const RunRecord& run = m.run;
    const std::string& id = run.start.id;
    const absl::Time start = run.start.start, end = End(m);
    const double x = X(start), width = std::max(X(end) - x, 1.0);
    const double bar_y = y + (kRowHeight - kBarHeight) / 2;
    const std::string title = absl::StrCat(
        run.start.stage, " (", id, "): ", std::string(VerdictName(m.verdict.kind)), ", ",
        run.end ? Seconds(end - start) : "running", "; ", m.baseline.Text(run.start.stage));
    std::string out = absl::StrFormat(
        "<g class=\"run\"><text x=\"%g\" y=\"%g\" font-size=\"12\">%s%s</text>\n"
        "<a href=\"/runs/%s\"><rect class=\"bar %s\" data-run=\"%s\" data-start=\"%s\" "
        "data-end=\"%s\" x=\"%.2f\" y=\"%g\" width=\"%.2f\" height=\"%g\" fill=\"%s\" "
        "rx=\"2\"><title>%s</title></rect>",
        6, y + kRowHeight / 2 + 4, HtmlEscape(run.start.stage),
        m.on_critical_path ? " *" : "", UrlEncode(id), std::string(VerdictName(m.verdict.kind)),
        HtmlEscape(id), FormatRfc3339(start), run.end ? FormatRfc3339(end) : "",
        x, bar_y, width, kBarHeight, VerdictFill(m.verdict.kind), HtmlEscape(title));
    // Where it waited for CPU (the bar's top stripe) or stalled on memory (its bottom one).
    const auto spans = view_.pressure.find(id);
    if (spans != view_.pressure.end()) {
      Stripes(out, spans->second, &PressureSpan::cpu, "cpu-wait", "waiting for CPU", bar_y,
              kCpuWaitFill);
      Stripes(out, spans->second, &PressureSpan::memory, "memory-stall", "stalled on memory",
              bar_y + kBarHeight - kStripe, kMemoryStallFill);
    }
    // The ledger has no time for an OOM kill; the kill ends the run, so it is marked at the end.
    const uint64_t kills = (run.end ? run.end->facts.oom_kills_kernel.value_or(0) : 0) +
                           run.agent.oom_kills_userspace.value_or(0);
    if (kills > 0) {
      const double kx = run.end ? X(end) : x + width;
      absl::StrAppendFormat(&out, "<g class=\"oom-kill\"><line x1=\"%.2f\" y1=\"%g\" "
                                  "x2=\"%.2f\" y2=\"%g\" stroke=\"%s\" stroke-width=\"3\"/>"
                                  "<title>OOM kill ×%d (by its end)</title></g>",
                            kx, bar_y - 3, kx, bar_y + kBarHeight + 3, kKillColor, kills);
    }
    for (const RunAnomaly& a : run.agent.anomalies) {
      const double ax = X(a.at);
      absl::StrAppendFormat(&out, "<path class=\"anomaly\" d=\"M%.2f %g l-4 -6 h8 z\" "
                                  "fill=\"%s\"><title>anomaly: %s at %s: %s</title></path>",
                            ax, bar_y, kAnomalyColor, HtmlEscape(a.name), FormatRfc3339(a.at),
                            HtmlEscape(a.detail));
    }
    out += "</a></g>\n";
    return out;
  }

  const PipelineRunView& view_;
  const absl::Time now_;
  absl::Time from_, to_;
  double plot_width_ = 0;
};

std::string ReportHtml(const PipelineRunView& view, absl::Time now) {
  const PipelineRunReport& r = view.report;
  std::string body = absl::StrCat(
      "<h1>Pipeline run ", HtmlEscape(r.pipeline_run), " of ", HtmlEscape(r.pipeline),
      "</h1>\n<p class=\"verdict\" id=\"verdict\">", VerdictSpan(r.verdict), "</p>\n<ul "
      "id=\"summary\">");
  const std::optional<double> wall = r.WallSeconds();
  absl::StrAppend(&body, "<li>", r.runs.size(), " runs, from ", FormatRfc3339(r.first_start),
                  wall ? absl::StrCat(" to ", FormatRfc3339(*r.last_end)) : " (running)",
                  "</li>\n<li id=\"wall\">wall ",
                  wall ? HtmlEscape(FormatSeconds(*wall)) + ": " : "",
                  HtmlEscape(r.WallText()), "</li>\n");
  if (r.deadline) {
    const PipelineDeadline& d = *r.deadline;
    std::string state = "not yet";
    if (d.met) state = *d.met ? "met" : "missed";
    absl::StrAppend(&body, "<li id=\"deadline\">deadline ", FormatTimeOfDay(d.time_of_day),
                    " local (", FormatRfc3339(d.at), "): <b>", state, "</b></li>\n");
  }
  absl::StrAppend(&body, "</ul>\n<h2>Timeline</h2>\n", PipelineTimelineSvg(view, now),
                  "<p>* on the night's critical path: its end held the night's end back. Each "
                  "bar links to its run.</p>\n");
  if (wall) {
    absl::StrAppend(&body, "<h2>What made the night longer</h2>\n");
    if (r.made_longer.empty()) {
      absl::StrAppend(&body, "<p id=\"longer\">", HtmlEscape(r.NoneLongerText()), ".</p>\n");
    } else {
      absl::StrAppend(&body, "<ul id=\"longer\">");
      for (const LongerRun& l : r.made_longer) {
        absl::StrAppend(&body, "<li>", RunLink(l.id), " (", HtmlEscape(l.stage), "): +",
                        FormatSeconds(l.excess_seconds),
                        absl::StrFormat(" (%.2f× its usual); largest cause: ", l.ratio),
                        std::string(SlowdownCauseText(l.largest_cause)), " ",
                        FormatSeconds(l.largest_cause_seconds), "</li>");
      }
      absl::StrAppend(&body, "</ul>\n");
    }
  }
  absl::StrAppend(&body, "<h2>Runs</h2>\n<table id=\"runs\"><tr><th>Run</th><th>Stage</th>"
                         "<th>Start</th><th>Wall</th><th>Verdict</th><th>Against its baseline"
                         "</th></tr>\n");
  for (const PipelineRunMember& m : r.runs) {
    const auto run_wall = m.run.Wall();
    absl::StrAppend(&body, "<tr><td>", RunLink(m.run.start.id), "</td><td>",
                    HtmlEscape(m.run.start.stage), "</td><td>+",
                    Seconds(m.run.start.start - r.first_start), "</td><td>",
                    run_wall ? Seconds(*run_wall) : "-", "</td><td>",
                    VerdictSpan(m.verdict.kind), "</td><td>",
                    HtmlEscape(m.baseline.Text(m.run.start.stage)), "</td></tr>\n");
  }
  absl::StrAppend(&body, "</table>\n<p><a href=\"/api/v1/pipelines/", UrlEncode(r.pipeline_run),
                  "?pipeline=", UrlEncode(r.pipeline), "\">JSON</a></p>\n");
  return Page(absl::StrCat("stagewatch: pipeline run ", r.pipeline_run, " of ", r.pipeline),
              body);
}

json PressureJson(const PipelineRunView& view) {
  json out = json::object();
  for (const auto& [id, spans] : view.pressure) {
    json list = json::array();
    for (const PressureSpan& s : spans) {
      list.push_back({{"from", FormatRfc3339(s.from)}, {"to", FormatRfc3339(s.to)},
                      {"cpu_wait", s.cpu}, {"memory_stall", s.memory}});
    }
    out[id] = list;
  }
  return out;
}

}  // namespace

std::string PipelineTimelineSvg(const PipelineRunView& view, absl::Time now) {
  return Timeline(view, now).Svg();
}

HttpReply AnswerPipelinesRequest(PipelinesSource& source, const RunsConfig& config,
                                 const HttpRequest& request) {
  const bool api = request.path.rfind("/api/", 0) == 0;
  const std::string base = api ? "/api/v1/pipelines" : "/pipelines";
  if (request.path == base || request.path == base + "/") {
    ListQuery q;
    if (std::string problem = ParseListQuery(request.query, q); !problem.empty()) {
      return Error(api, 400, problem);
    }
    absl::StatusOr<PipelineRunPage> page =
        source.List({.pipeline = q.pipeline, .after = q.before, .limit = q.limit});
    if (absl::IsNotFound(page.status())) {
      return Error(api, 400, absl::StrCat("before: ", page.status().message()));
    }
    if (!page.ok()) return Unavailable(api, page.status());
    if (!api) return {200, kHtml, ListHtml(*page, q)};
    json out = json::array();
    for (const PipelineRunSummary& p : page->runs) out.push_back(PipelineRunSummaryJson(p));
    const json next = page->more ? json(page->runs.back().pipeline + "/" +
                                        page->runs.back().pipeline_run)
                                 : json(nullptr);
    return {200, kJson, JsonText(json{{"pipeline_runs", out}, {"next_before", next}}) + "\n"};
  }
  const std::string id = request.path.substr(base.size() + 1);
  std::string pipeline;
  for (const auto& [key, value] : request.query) {
    if (key != "pipeline") {
      return Error(api, 400, absl::StrCat("unknown parameter \"", key, "\"; a pipeline run's "
                                          "page takes pipeline"));
    }
    if (absl::Status s = CheckPipelineName(value); !s.ok()) {
      return Error(api, 400, absl::StrCat("pipeline: ", s.message()));
    }
    pipeline = value;
  }
  if (absl::Status s = CheckPipelineRunId(id); !s.ok()) {
    return Error(api, 400, std::string(s.message()));
  }
  absl::StatusOr<PipelineRunView> view = source.Get(pipeline, id);
  if (!view.ok()) return Unavailable(api, view.status());
  const absl::Time now = absl::Now();
  if (!api) return {200, kHtml, ReportHtml(*view, now)};
  json out = PipelineRunReportJson(view->report, config);
  out["pressure_spans"] = PressureJson(*view);
  out["stall_share"] = kStallShare;
  return {200, kJson, JsonText(out) + "\n"};
}

std::vector<ExtraHandler> PipelinesHandlers(PipelinesSource* source, RunsConfig config) {
  auto answer = [source, config](const HttpRequest& request) {
    return AnswerPipelinesRequest(*source, config, request);
  };
  std::vector<ExtraHandler> out;
  for (const char* path : {"/pipelines", "/pipelines/", "/api/v1/pipelines",
                           "/api/v1/pipelines/"}) {
    out.push_back({path, answer});
  }
  return out;
}

}  // namespace stagewatch::exporters
