// The exposition writer against prometheus-cpp's own TextSerializer: the same bytes for
// counters, gauges, histograms, summaries and untyped samples, escaped labels, timestamps,
// NaN and infinities, and many doubles chosen to catch any difference in rounding.
#include "exporters/metrics/text_exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <cstring>
#include <limits>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "exporters/metrics/metric_builders.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace stagewatch::exporters {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Reference(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

// The first line where the two differ, for a readable failure.
std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; line++) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "no difference";
    if (la != lb || more_a != more_b) {
      return "line " + std::to_string(line) + ": want \"" + la + "\", got \"" + lb + "\"";
    }
  }
}

// The text with every le and quantile label's value left out: the writer prints those the
// shortest way (BoundsAreTheShortestTextThatReadsBackExactly), TextSerializer with "%.16g".
std::string WithoutBounds(const std::string& text) {
  static const std::regex kBound(R"re((le|quantile)="[^"]*")re");
  return std::regex_replace(text, kBound, "$1=\"\"");
}

void ExpectSameAsReference(const std::vector<prometheus::MetricFamily>& families) {
  const std::string want = WithoutBounds(Reference(families));
  const std::string got = WithoutBounds(WriteTextExposition(families));
  EXPECT_EQ(got, want) << FirstDifference(want, got);
}

// Values where "%.16g" has to choose: ties at the 17th digit, the integer/exponent boundary,
// negative zero, subnormals, the extremes, and the histogram edges and sums the agent makes.
std::vector<double> EdgeValues() {
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           0.1 + 0.2,
                           1.0 / 3,
                           2.0 / 3,
                           1e15 - 1,
                           1e15,
                           1e15 + 1,
                           9007199254740991.0,
                           9007199254740993.0,
                           1e16,
                           1e16 - 2,
                           123456789012345678.0,
                           1e21,
                           1e22,
                           1.5e-06,
                           1e-4,
                           1e-5,
                           1.0 + std::ldexp(1.0, -16),  // exactly 17 digits, ending in 5
                           1.0 + 3 * std::ldexp(1.0, -16),
                           0.5,
                           2.5,
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::epsilon(),
                           18446744073709551615.0,
                           -4.2e-310};
  for (int i = 0; i < 40; i++) {
    v.push_back(std::ldexp(1e-9, i));
    v.push_back(std::ldexp(1.0, i * 3));
    v.push_back(std::ldexp(1.0, -i * 5));
  }
  for (uint64_t ns = 1; ns < 1e13; ns = ns * 7 + 3) v.push_back(static_cast<double>(ns) * 1e-9);
  return v;
}

TEST(TextExpositionTest, GaugesOfEdgeValuesMatchTheReference) {
  auto family = GaugeFamily("stagewatch_edge", "Edge values.");
  for (double value : EdgeValues()) {
    AddGauge(&family, {{"k", "v"}}, value);
    AddGauge(&family, {}, -value);
  }
  AddGauge(&family, {}, kInf);
  AddGauge(&family, {}, -kInf);
  AddGauge(&family, {}, std::nan(""));
  AddGauge(&family, {}, -std::nan(""));
  ExpectSameAsReference({family});
}

TEST(TextExpositionTest, RandomDoublesMatchTheReference) {
  std::mt19937_64 random(20261201);
  auto bits = GaugeFamily("stagewatch_bits", "Any bit pattern.");
  auto ratios = CounterFamily("stagewatch_ratios_total", "Ratios of integers.");
  for (int i = 0; i < 20000; i++) {
    const uint64_t pattern = random();
    double value;
    std::memcpy(&value, &pattern, sizeof(value));
    AddGauge(&bits, {}, value);
    AddCounter(&ratios, {}, static_cast<double>(random() % 100000000) / (1 + random() % 1000));
  }
  ExpectSameAsReference({bits, ratios});
}

TEST(TextExpositionTest, CountersGaugesAndHistogramsWithEscapedLabels) {
  auto counter = CounterFamily("stagewatch_events_total", "Events seen.");
  AddCounter(&counter, {{"pipeline", "etl"}, {"pipeline_stage", "build"}}, 3);
  AddCounter(&counter, {{"pipeline", ""}, {"pipeline_stage", "a\\b\"c\nd"}}, 12345678901234.0);
  AddCounter(&counter, {{"v", "héllo ✓ 日本"}}, 0);
  auto gauge = GaugeFamily("stagewatch_level_bytes", "A level.");
  AddGauge(&gauge, {{"k", "\"\"\\\\\n\n"}}, -0.5);
  AddGauge(&gauge, {}, 1e21);
  auto histogram = HistogramFamily("stagewatch_wait_seconds", "Wait.");
  std::vector<uint64_t> slots(27);
  for (size_t i = 0; i < slots.size(); i++) slots[i] = (i * 7919) % 13;
  AddLog2Histogram(&histogram, {{"pipeline_stage", "build"}}, slots, 987654321, 1e-9, 4);
  AddLog2Histogram(&histogram, {{"pipeline_stage", "x\"y"}}, std::vector<uint64_t>(27), 0, 1e-9);
  AddLog2Histogram(&histogram, {}, {1, 2, 3}, 10, 1.0);
  auto empty = CounterFamily("stagewatch_nothing_total", "Nothing yet.");
  auto no_help = GaugeFamily("stagewatch_no_help", "");
  AddGauge(&no_help, {}, 1);
  ExpectSameAsReference({counter, gauge, histogram, empty, no_help});
  ExpectSameAsReference({});
}

TEST(TextExpositionTest, HistogramWithoutInfBucketGetsOne) {
  prometheus::MetricFamily family = HistogramFamily("h_seconds", "H.");
  prometheus::ClientMetric metric;
  metric.label = {{"a", "b"}};
  metric.histogram.bucket = {{1, 0.005}, {4, 0.25}, {6, 1}};
  metric.histogram.sample_count = 7;
  metric.histogram.sample_sum = 2.125;
  family.metric.push_back(metric);
  metric.label.clear();
  family.metric.push_back(metric);
  ExpectSameAsReference({family});
  EXPECT_NE(WriteTextExposition({family}).find("h_seconds_bucket{a=\"b\",le=\"+Inf\"} 7\n"),
            std::string::npos);
}

TEST(TextExpositionTest, SummariesUntypedAndTimestamps) {
  prometheus::MetricFamily summary{"s_seconds", "S.", prometheus::MetricType::Summary, {}};
  prometheus::ClientMetric metric;
  metric.label = {{"q", "1"}};
  metric.summary.sample_count = 42;
  metric.summary.sample_sum = 0.1 + 0.2;
  metric.summary.quantile = {{0.5, 0.25}, {0.9, 1.0 / 3}, {0.99, std::nan("")}};
  metric.timestamp_ms = 1764595200123;
  summary.metric.push_back(metric);
  metric.label.clear();
  metric.timestamp_ms = -5;
  summary.metric.push_back(metric);
  prometheus::MetricFamily untyped{"u", "U.", prometheus::MetricType::Untyped, {}};
  prometheus::ClientMetric u;
  u.untyped.value = -kInf;
  u.timestamp_ms = 7;
  untyped.metric.push_back(u);
  ExpectSameAsReference({summary, untyped});
}

// The one place the writer differs on purpose: HELP escapes backslash and newline, which the
// format asks for and TextSerializer leaves out.
TEST(TextExpositionTest, HelpIsEscapedWhereTheReferenceWritesItRaw) {
  auto family = GaugeFamily("g", "a\\b\nc \"q\"");
  AddGauge(&family, {}, 1);
  auto escaped = family;
  escaped.help = "a\\\\b\\nc \"q\"";
  EXPECT_EQ(WriteTextExposition({family}), Reference({escaped}));
  EXPECT_EQ(WriteTextExposition({family}).rfind("# HELP g a\\\\b\\nc \"q\"\n", 0), 0u);
}

TEST(TextExpositionTest, BoundsAreTheShortestTextThatReadsBackExactly) {
  auto text = [](double v) {
    std::string out;
    AppendBoundValue(&out, v);
    return out;
  };
  EXPECT_EQ(text(std::ldexp(1e-9, 13)), "8.192e-06");  // "%.16g": 8.192000000000001e-06
  EXPECT_EQ(text(std::ldexp(1e-9, 17)), "0.000131072");
  EXPECT_EQ(text(1), "1");
  EXPECT_EQ(text(0.25), "0.25");
  EXPECT_EQ(text(100000), "100000");
  EXPECT_EQ(text(1048576), "1.048576e+06");
  EXPECT_EQ(text(0.1 + 0.2), "0.30000000000000004");  // another double than 0.3: kept apart
  EXPECT_EQ(text(kInf), "+Inf");
  for (double value : EdgeValues()) {
    for (double v : {value, -value}) {
      const std::string t = text(v);
      EXPECT_EQ(std::strtod(t.c_str(), nullptr), v) << t;
      // Shortest: one significant digit fewer no longer reads back as v.
      char shortest[32];
      auto [end, ec] = std::to_chars(shortest, shortest + sizeof(shortest), v,
                                     std::chars_format::scientific);
      const std::string digits(shortest, std::find(shortest, end, 'e'));
      const std::string t_digits(t.begin(), std::find(t.begin(), t.end(), 'e'));
      auto significant = [](const std::string& s) {
        std::string d;
        for (char c : s) {
          if (std::isdigit(static_cast<unsigned char>(c))) d += c;
        }
        d.erase(0, d.find_first_not_of('0'));
        d.erase(d.find_last_not_of('0') + 1);
        return d.size();
      };
      EXPECT_EQ(significant(t_digits), significant(digits)) << t;
    }
  }
}

TEST(TextExpositionTest, SampleValuesAsWritten) {
  auto text = [](double v) {
    std::string out;
    AppendSampleValue(&out, v);
    return out;
  };
  EXPECT_EQ(text(3), "3");
  EXPECT_EQ(text(-0.0), "-0");
  EXPECT_EQ(text(0.1 + 0.2), "0.3");
  EXPECT_EQ(text(1e16), "1e+16");
  EXPECT_EQ(text(999999999999999), "999999999999999");
  EXPECT_EQ(text(std::ldexp(1e-9, 10)), "1.024e-06");
  EXPECT_EQ(text(kInf), "+Inf");
  EXPECT_EQ(text(std::nan("")), "Nan");
}

}  // namespace
}  // namespace stagewatch::exporters
