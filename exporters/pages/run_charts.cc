#include "exporters/pages/run_charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stagewatch::exporters {
namespace {

constexpr double kWidth = 760, kHeight = 220;
constexpr double kLeft = 80, kRight = 20, kTop = 28, kBottom = 36;
// A mark label's font-size 11 sans-serif: at most this wide per character (a little over the
// widest common glyphs' average), and its rows this far apart.
constexpr double kMarkCharWidth = 7, kMarkRowHeight = 13;
constexpr int kTicks = 4;

// At most two points per pixel column: the lowest and the highest in it, in time order, so a
// long run's line stays small to send and draw and keeps every peak.
std::vector<std::pair<double, double>> PerColumn(const std::vector<std::pair<double, double>>& in,
                                                 double duration, int columns) {
  if (in.size() <= size_t(2 * columns)) return in;
  std::vector<std::pair<double, double>> out;
  size_t i = 0;
  while (i < in.size()) {
    const int column = int(in[i].first / duration * columns);
    size_t lo = i, hi = i, j = i;
    for (; j < in.size() && int(in[j].first / duration * columns) == column; ++j) {
      if (in[j].second < in[lo].second) lo = j;
      if (in[j].second > in[hi].second) hi = j;
    }
    out.push_back(in[std::min(lo, hi)]);
    if (lo != hi) out.push_back(in[std::max(lo, hi)]);
    i = j;
  }
  return out;
}

}  // namespace

double NiceStep(double span, int parts) {
  const double raw = span / parts;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string TimeLabel(double seconds) {
  if (seconds >= 3600) return absl::StrFormat("%.1f h", seconds / 3600);
  if (seconds >= 120) return absl::StrFormat("%.0f min", seconds / 60);
  return absl::StrFormat("%g s", seconds);
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

std::string RenderChartSvg(const Chart& chart) {
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double top = chart.min_top;
  size_t points = 0;
  for (const ChartLine& l : chart.lines) {
    points += l.points.size();
    for (const auto& [t, v] : l.points) top = std::max(top, v);
  }
  const double y_step = NiceStep(top * 1.05, kTicks);
  top = y_step * std::ceil(top * 1.05 / y_step);
  const double duration = std::max(chart.duration, 1e-3);
  auto x = [&](double t) { return kLeft + plot_w * std::clamp(t / duration, 0.0, 1.0); };
  auto y = [&](double v) { return kTop + plot_h * (1 - std::clamp(v / top, 0.0, 1.0)); };

  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "viewBox=\"0 0 %g %g\" role=\"img\" aria-label=\"%s\">\n"
      "<text x=\"%g\" y=\"18\" font-weight=\"bold\">%s</text>\n",
      kWidth, kHeight, kWidth, kHeight, HtmlEscape(chart.title), kLeft, HtmlEscape(chart.title));
  // Axes, grid and labels.
  for (double v = 0; v <= top + y_step / 2; v += y_step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s"
                          "</text>\n",
                          kLeft, y(v), kLeft + plot_w, y(v), kLeft - 6, y(v) + 4,
                          HtmlEscape(chart.format_value(v)));
  }
  const double t_step = NiceStep(duration, kTicks);
  for (double t = 0; t <= duration + t_step / 1e6; t += t_step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#999\"/>"
                          "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\" font-size=\"11\">%s"
                          "</text>\n",
                          x(t), kTop + plot_h, x(t), kTop + plot_h + 4, x(t), kTop + plot_h + 16,
                          TimeLabel(t));
  }
  absl::StrAppendFormat(&svg,
                        "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                        "stroke=\"#999\"/>\n<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" "
                        "font-size=\"11\">time since the run's start</text>\n",
                        kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 4);
  if (points == 0) {
    absl::StrAppendFormat(&svg,
                          "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" fill=\"#666\">not "
                          "sampled</text>\n", kLeft + plot_w / 2, kTop + plot_h / 2);
  }
  // Lines, each with its legend entry at the top right.
  double legend_x = kLeft + plot_w;
  for (auto it = chart.lines.rbegin(); it != chart.lines.rend(); ++it) {
    const ChartLine& l = *it;
    if (l.points.empty()) continue;
    std::string coords;
    for (const auto& [t, v] : PerColumn(l.points, duration, int(plot_w))) {
      absl::StrAppendFormat(&coords, "%.1f,%.1f ", x(t), y(v));
    }
    if (!coords.empty()) coords.pop_back();
    absl::StrAppendFormat(&svg,
                          "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\"%s points=\"%s\"><title>%s</title></polyline>\n",
                          HtmlEscape(l.color), l.dashed ? " stroke-dasharray=\"6 4\"" : "", coords,
                          HtmlEscape(l.name));
    const double width = 20 + 7 * double(l.name.size());
    legend_x -= width;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.1f\" y=\"8\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                          "<text x=\"%.1f\" y=\"17\" font-size=\"11\">%s</text>\n",
                          legend_x, HtmlEscape(l.color), legend_x + 13, HtmlEscape(l.name));
  }
  // Marks over the lines, labelled at the top of the plot, each label in the first row where
  // it clears the labels already there: marks close in time (an anomaly just before the OOM
  // kill at the end) would otherwise print over each other.
  std::vector<std::vector<std::pair<double, double>>> rows;  // each row's [left, right] spans
  for (const ChartMark& m : chart.marks) {
    const double at = x(m.seconds);
    const double width = kMarkCharWidth * double(m.label.size());
    // Left of its line, or right of it where it would cross the y axis labels.
    const bool right = at - 3 - width < kLeft;
    const double left = right ? at + 3 : at - 3 - width;
    size_t row = 0;
    while (row < rows.size() &&
           std::any_of(rows[row].begin(), rows[row].end(), [&](const auto& span) {
             return left < span.second + 4 && span.first < left + width + 4;
           })) {
      ++row;
    }
    if (row == rows.size()) rows.emplace_back();
    rows[row].push_back({left, left + width});
    absl::StrAppendFormat(&svg,
                          "<g class=\"mark\"><line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
                          "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"3 3\"/>"
                          "<text x=\"%.1f\" y=\"%g\" font-size=\"11\" fill=\"%s\" "
                          "text-anchor=\"%s\">%s</text><title>%s</title></g>\n",
                          at, kTop, at, kTop + plot_h, HtmlEscape(m.color),
                          right ? at + 3 : at - 3, kTop + 12 + kMarkRowHeight * double(row),
                          HtmlEscape(m.color), right ? "start" : "end", HtmlEscape(m.label),
                          HtmlEscape(m.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace stagewatch::exporters
