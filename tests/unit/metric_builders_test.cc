// Pins the exact exposition text that prometheus-cpp 1.0.1's TextSerializer gives for the
// families our builders make, since dashboards and promtool depend on it.
#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/text_exposition.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kInf = std::numeric_limits<double>::infinity();

size_t CountOccurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

prometheus::ClientMetric OneHistogram(const std::vector<uint64_t>& slots, uint64_t sum_raw,
                                      double unit) {
  auto family = HistogramFamily("h_seconds", "h");
  AddLog2Histogram(&family, {}, slots, sum_raw, unit);
  EXPECT_EQ(family.metric.size(), 1u);
  return family.metric.at(0);
}

// ---- families -------------------------------------------------------------------------

TEST(MetricBuildersTest, FamiliesCarryNameHelpAndType) {
  auto c = CounterFamily("stagewatch_x_total", "X.");
  auto g = GaugeFamily("stagewatch_y", "Y.");
  auto h = HistogramFamily("stagewatch_z_seconds", "Z.");
  EXPECT_EQ(c.name, "stagewatch_x_total");
  EXPECT_EQ(c.help, "X.");
  EXPECT_EQ(c.type, prometheus::MetricType::Counter);
  EXPECT_EQ(g.type, prometheus::MetricType::Gauge);
  EXPECT_EQ(h.type, prometheus::MetricType::Histogram);
  EXPECT_TRUE(c.metric.empty());
}

TEST(MetricBuildersTest, CounterTextIsPinned) {
  auto family = CounterFamily("stagewatch_events_total", "Events seen.");
  AddCounter(&family, {{"pipeline", "etl"}, {"pipeline_stage", "build"}}, 3);
  AddCounter(&family, {{"pipeline", "etl"}, {"pipeline_stage", "test"}}, 0);
  AddCounter(&family, {}, 12345678901234.0);
  EXPECT_EQ(SerializeText({family}),
            "# HELP stagewatch_events_total Events seen.\n"
            "# TYPE stagewatch_events_total counter\n"
            "stagewatch_events_total{pipeline=\"etl\",pipeline_stage=\"build\"} 3\n"
            "stagewatch_events_total{pipeline=\"etl\",pipeline_stage=\"test\"} 0\n"
            "stagewatch_events_total 12345678901234\n");
}

TEST(MetricBuildersTest, GaugeTextIsPinned) {
  auto family = GaugeFamily("stagewatch_level_bytes", "A level.");
  AddGauge(&family, {{"k", "a"}}, -0.5);
  AddGauge(&family, {{"k", "b"}}, 0.1);
  AddGauge(&family, {{"k", "c"}}, 1e21);
  AddGauge(&family, {{"k", "d"}}, 1.5e-06);
  AddGauge(&family, {{"k", "e"}}, kInf);
  AddGauge(&family, {{"k", "f"}}, std::nan(""));
  EXPECT_EQ(SerializeText({family}),
            "# HELP stagewatch_level_bytes A level.\n"
            "# TYPE stagewatch_level_bytes gauge\n"
            "stagewatch_level_bytes{k=\"a\"} -0.5\n"
            "stagewatch_level_bytes{k=\"b\"} 0.1\n"
            "stagewatch_level_bytes{k=\"c\"} 1e+21\n"
            "stagewatch_level_bytes{k=\"d\"} 1.5e-06\n"
            "stagewatch_level_bytes{k=\"e\"} +Inf\n"
            // prometheus-cpp spells it "Nan"; Prometheus parses it case-insensitively.
            "stagewatch_level_bytes{k=\"f\"} Nan\n");
}

TEST(MetricBuildersTest, LabelOrderIsKeptAsGiven) {
  auto family = GaugeFamily("g", "G.");
  AddGauge(&family, {{"z", "1"}, {"a", "2"}}, 1);
  ASSERT_EQ(family.metric.size(), 1u);
  ASSERT_EQ(family.metric[0].label.size(), 2u);
  EXPECT_EQ(family.metric[0].label[0].name, "z");
  EXPECT_EQ(family.metric[0].label[1].value, "2");
}

TEST(MetricBuildersTest, EmptyFamilyRendersHeadersOnly) {
  EXPECT_EQ(SerializeText({CounterFamily("c_total", "C.")}),
            "# HELP c_total C.\n"
            "# TYPE c_total counter\n");
  EXPECT_EQ(SerializeText({}), "");
}

// ---- labels and help ------------------------------------------------------------------

TEST(MetricBuildersTest, EmptyLabelValueIsKept) {
  auto family = GaugeFamily("g", "G.");
  AddGauge(&family, {{"pipeline", ""}}, 1);
  EXPECT_THAT(SerializeText({family}), HasSubstr("g{pipeline=\"\"} 1\n"));
}

TEST(MetricBuildersTest, LabelValuesAreEscaped) {
  auto family = GaugeFamily("g", "G.");
  AddGauge(&family, {{"v", "a\\b\"c\nd"}}, 1);
  EXPECT_THAT(SerializeText({family}), HasSubstr("g{v=\"a\\\\b\\\"c\\nd\"} 1\n"));
}

TEST(MetricBuildersTest, UnicodePassesThrough) {
  auto family = GaugeFamily("g", "Größe ✓.");
  AddGauge(&family, {{"v", "héllo ✓ 日本"}}, 1);
  EXPECT_EQ(SerializeText({family}),
            "# HELP g Größe ✓.\n"
            "# TYPE g gauge\n"
            "g{v=\"héllo ✓ 日本\"} 1\n");
}

TEST(MetricBuildersTest, HelpBackslashAndNewlineAreEscaped) {
  auto family = GaugeFamily("g", "a\\b\nc \"q\"");
  AddGauge(&family, {}, 1);
  auto plain = GaugeFamily("p", "Plain.");
  EXPECT_EQ(SerializeText({family, plain}),
            // Quotes need no escaping in HELP.
            "# HELP g a\\\\b\\nc \"q\"\n"
            "# TYPE g gauge\n"
            "g 1\n"
            "# HELP p Plain.\n"
            "# TYPE p gauge\n");
  // The data model keeps the unescaped text.
  EXPECT_EQ(family.help, "a\\b\nc \"q\"");
}

// ---- log2 histograms ------------------------------------------------------------------

TEST(Log2HistogramTest, AllZeroSlotsEmitEveryBucketAndInf) {
  auto family = HistogramFamily("stagewatch_wait_seconds", "Wait.");
  AddLog2Histogram(&family, {{"pipeline_stage", "build"}}, {0, 0, 0}, 0, 1.0);
  EXPECT_EQ(SerializeText({family}),
            "# HELP stagewatch_wait_seconds Wait.\n"
            "# TYPE stagewatch_wait_seconds histogram\n"
            "stagewatch_wait_seconds_count{pipeline_stage=\"build\"} 0\n"
            "stagewatch_wait_seconds_sum{pipeline_stage=\"build\"} 0\n"
            "stagewatch_wait_seconds_bucket{pipeline_stage=\"build\",le=\"1\"} 0\n"
            "stagewatch_wait_seconds_bucket{pipeline_stage=\"build\",le=\"2\"} 0\n"
            "stagewatch_wait_seconds_bucket{pipeline_stage=\"build\",le=\"4\"} 0\n"
            "stagewatch_wait_seconds_bucket{pipeline_stage=\"build\",le=\"+Inf\"} 0\n");
}

TEST(Log2HistogramTest, DataModelHasExplicitInfBucket) {
  auto m = OneHistogram({1, 2, 3}, 10, 1.0);
  ASSERT_EQ(m.histogram.bucket.size(), 4u);
  EXPECT_EQ(m.histogram.bucket.back().upper_bound, kInf);
  EXPECT_EQ(m.histogram.bucket.back().cumulative_count, 6u);
  EXPECT_EQ(m.histogram.sample_count, 6u);
}

TEST(Log2HistogramTest, ValueOnlyInSlotZero) {
  auto m = OneHistogram({5, 0, 0, 0}, 3, 1.0);
  std::vector<uint64_t> counts;
  for (const auto& b : m.histogram.bucket) counts.push_back(b.cumulative_count);
  EXPECT_EQ(counts, (std::vector<uint64_t>{5, 5, 5, 5, 5}));
  EXPECT_EQ(m.histogram.sample_count, 5u);
}

TEST(Log2HistogramTest, ValueOnlyInLastSlot) {
  auto m = OneHistogram({0, 0, 0, 7}, 56, 1.0);
  std::vector<uint64_t> counts;
  for (const auto& b : m.histogram.bucket) counts.push_back(b.cumulative_count);
  EXPECT_EQ(counts, (std::vector<uint64_t>{0, 0, 0, 7, 7}));
  EXPECT_EQ(m.histogram.bucket[3].upper_bound, 8.0);
  EXPECT_EQ(m.histogram.sample_count, 7u);
}

TEST(Log2HistogramTest, CumulativeCountsAreMonotone) {
  std::vector<uint64_t> slots(27);
  for (size_t i = 0; i < slots.size(); ++i) slots[i] = (i * 7919) % 13;
  auto m = OneHistogram(slots, 0, 1e-9);
  ASSERT_EQ(m.histogram.bucket.size(), slots.size() + 1);
  uint64_t expected = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    expected += slots[i];
    EXPECT_EQ(m.histogram.bucket[i].cumulative_count, expected) << "slot " << i;
    if (i > 0) {
      EXPECT_GE(m.histogram.bucket[i].cumulative_count,
                m.histogram.bucket[i - 1].cumulative_count);
      EXPECT_GT(m.histogram.bucket[i].upper_bound, m.histogram.bucket[i - 1].upper_bound);
    }
  }
  EXPECT_EQ(m.histogram.bucket.back().cumulative_count, expected);
  EXPECT_EQ(m.histogram.sample_count, expected);
}

TEST(Log2HistogramTest, EdgesArePowersOfTwoTimesUnit) {
  auto m = OneHistogram(std::vector<uint64_t>(64, 0), 0, 1e-9);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(m.histogram.bucket[i].upper_bound, std::ldexp(1e-9, i)) << "slot " << i;
  }
  EXPECT_EQ(m.histogram.bucket[10].upper_bound, 1.024e-06);
  EXPECT_EQ(m.histogram.bucket[30].upper_bound, 1.073741824);
}

TEST(Log2HistogramTest, LeTextForNanosecondSlots) {
  auto family = HistogramFamily("h_seconds", "H.");
  AddLog2Histogram(&family, {}, std::vector<uint64_t>(64, 0), 0, 1e-9);
  const std::string text = SerializeText({family});
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"1e-09\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"2e-09\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"1.024e-06\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"0.001048576\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"1.073741824\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"8.192e-06\"} 0\n"));  // no float noise
  // Every edge reads back exactly, however large (the shortest round-trip text).
  for (int i = 0; i < 64; ++i) {
    const double edge = std::ldexp(1e-9, i);
    std::string key;
    AppendBoundValue(&key, edge);
    EXPECT_THAT(text, HasSubstr("le=\"" + key + "\"")) << "slot " << i;
    EXPECT_EQ(std::strtod(key.c_str(), nullptr), edge) << "slot " << i;
  }
}

TEST(Log2HistogramTest, ExactlyOneInfBucketPerSeries) {
  auto family = HistogramFamily("h_seconds", "H.");
  AddLog2Histogram(&family, {{"s", "a"}}, {1, 2}, 3, 1.0);
  AddLog2Histogram(&family, {{"s", "b"}}, {}, 0, 1.0);
  const std::string text = SerializeText({family});
  EXPECT_EQ(CountOccurrences(text, "le=\"+Inf\""), 2u);
  EXPECT_EQ(CountOccurrences(text, "h_seconds_bucket{s=\"a\",le=\"+Inf\"} 3\n"), 1u);
  EXPECT_EQ(CountOccurrences(text, "h_seconds_bucket{s=\"b\",le=\"+Inf\"} 0\n"), 1u);
}

TEST(Log2HistogramTest, EmptySlotsGiveOnlyInf) {
  auto m = OneHistogram({}, 0, 1e-9);
  ASSERT_EQ(m.histogram.bucket.size(), 1u);
  EXPECT_EQ(m.histogram.bucket[0].upper_bound, kInf);
  EXPECT_EQ(m.histogram.sample_count, 0u);
}

TEST(Log2HistogramTest, SumIsScaledByUnit) {
  auto m = OneHistogram({0, 1, 1}, 1500, 1e-9);
  EXPECT_DOUBLE_EQ(m.histogram.sample_sum, 1.5e-06);
  auto bytes = OneHistogram({1}, 3, 4096.0);
  EXPECT_EQ(bytes.histogram.sample_sum, 12288.0);

  auto family = HistogramFamily("h_seconds", "H.");
  AddLog2Histogram(&family, {}, {0, 1, 1}, 1500, 1e-9);
  EXPECT_THAT(SerializeText({family}), HasSubstr("h_seconds_sum 1.5e-06\n"));
}

TEST(Log2HistogramTest, FullTextIsPinned) {
  auto family = HistogramFamily("stagewatch_io_seconds", "IO latency.");
  AddLog2Histogram(&family, {{"pipeline", "p"}}, {1, 0, 2, 4}, 25, 1e-3);
  EXPECT_EQ(SerializeText({family}),
            "# HELP stagewatch_io_seconds IO latency.\n"
            "# TYPE stagewatch_io_seconds histogram\n"
            "stagewatch_io_seconds_count{pipeline=\"p\"} 7\n"
            "stagewatch_io_seconds_sum{pipeline=\"p\"} 0.025\n"
            "stagewatch_io_seconds_bucket{pipeline=\"p\",le=\"0.001\"} 1\n"
            "stagewatch_io_seconds_bucket{pipeline=\"p\",le=\"0.002\"} 1\n"
            "stagewatch_io_seconds_bucket{pipeline=\"p\",le=\"0.004\"} 3\n"
            "stagewatch_io_seconds_bucket{pipeline=\"p\",le=\"0.008\"} 7\n"
            "stagewatch_io_seconds_bucket{pipeline=\"p\",le=\"+Inf\"} 7\n");
}

// ---- promtool lint --------------------------------------------------------------------

constexpr const char* kPromtool = "/usr/bin/promtool";

struct PromtoolResult {
  int exit_status = -1;
  std::string output;
};

PromtoolResult RunPromtoolCheckMetrics(const std::string& text) {
  PromtoolResult result;
  std::string out_path = ::testing::TempDir() + "promtool_out_XXXXXX";
  const int fd = mkstemp(out_path.data());
  if (fd < 0) return result;
  close(fd);
  // Text goes to promtool's stdin; its complaints (stdout and stderr) go to a file.
  const std::string command =
      std::string(kPromtool) + " check metrics >" + out_path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "w");
  if (pipe == nullptr) return result;
  std::fwrite(text.data(), 1, text.size(), pipe);
  const int status = pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out_path);
  result.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::remove(out_path.c_str());
  return result;
}

TEST(PromtoolLintTest, RepresentativeFamiliesPass) {
  if (access(kPromtool, X_OK) != 0) {
    GTEST_SKIP() << kPromtool << " not found; install the Debian package `prometheus`";
  }
  auto counter = CounterFamily("stagewatch_stage_cpu_seconds_total",
                               "CPU time spent by a pipeline stage.");
  AddCounter(&counter, {{"pipeline", "etl"}, {"pipeline_stage", "build"}}, 1.25);
  AddCounter(&counter, {{"pipeline", ""}, {"pipeline_stage", "q\"u\\o\nte ✓"}}, 0);
  auto gauge = GaugeFamily("stagewatch_stage_memory_bytes", "Memory of a stage.\nSecond line.");
  AddGauge(&gauge, {{"pipeline_stage", "build"}}, 1048576);
  AddGauge(&gauge, {{"pipeline_stage", "idle"}}, std::nan(""));
  auto histogram =
      HistogramFamily("stagewatch_stage_runqueue_latency_seconds", "Run-queue latency.");
  AddLog2Histogram(&histogram, {{"pipeline_stage", "build"}}, {3, 0, 5, 1, 0, 0, 2}, 12345,
                   1e-9);
  AddLog2Histogram(&histogram, {{"pipeline_stage", "test"}}, std::vector<uint64_t>(64, 0), 0,
                   1e-9);
  auto info = GaugeFamily("stagewatch_build_info", "Build information.");
  AddGauge(&info, {{"version", "0.1.0"}, {"revision", "abc"}}, 1);

  const std::string text = SerializeText({counter, gauge, histogram, info});
  const PromtoolResult result = RunPromtoolCheckMetrics(text);
  EXPECT_EQ(result.exit_status, 0) << result.output << "\n--- input ---\n" << text;
  EXPECT_EQ(result.output, "") << "--- input ---\n" << text;
}

TEST(PromtoolLintTest, DetectsACounterWithoutTotal) {
  // Guards the test above: promtool really does read our stdin and lint it.
  if (access(kPromtool, X_OK) != 0) {
    GTEST_SKIP() << kPromtool << " not found; install the Debian package `prometheus`";
  }
  auto counter = CounterFamily("stagewatch_events", "Events.");
  AddCounter(&counter, {}, 1);
  const PromtoolResult result = RunPromtoolCheckMetrics(SerializeText({counter}));
  EXPECT_NE(result.exit_status, 0);
  EXPECT_THAT(result.output, HasSubstr("_total"));
}

}  // namespace
}  // namespace stagewatch::exporters
