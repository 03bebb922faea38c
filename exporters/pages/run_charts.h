// Charts over a run's time as inline SVG, drawn on the server: lines with axes and units, and
// vertical marks for events (OOM kills, anomalies). No script, nothing fetched.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace stagewatch::exporters {

// &, <, >, " and ' as entities: safe in element text and in quoted attributes.
std::string HtmlEscape(std::string_view text);
// Percent-encoded for a URL's path segment or query value: all but letters, digits, -_.~
std::string UrlEncode(std::string_view text);

// A round step (1, 2 or 5 × 10^n) that splits `span` into about `parts` parts: an axis' ticks.
double NiceStep(double span, int parts);
// A time axis' label: "30 s", "5 min", "1.5 h".
std::string TimeLabel(double seconds);

struct ChartLine {
  std::string name;   // in the legend
  std::string color;  // CSS colour
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (seconds since the run's start, value)
};

struct ChartMark {
  double seconds = 0;  // since the run's start
  std::string label;
  std::string color;
};

struct Chart {
  std::string title;
  std::function<std::string(double)> format_value;  // the y axis labels, with the unit
  double min_top = 1;  // the y axis reaches at least this, so a flat zero line still reads
  double duration = 0;  // seconds: the x axis spans [0, duration]
  std::vector<ChartLine> lines;
  std::vector<ChartMark> marks;
};

// An <svg> element; a chart with no points says so in place of lines.
std::string RenderChartSvg(const Chart& chart);

}  // namespace stagewatch::exporters
