#include "exporters/metrics/metric_builders.h"

#include <cmath>
#include <limits>
#include <utility>

#include "exporters/metrics/text_exposition.h"

namespace stagewatch::exporters {
namespace {

prometheus::MetricFamily MakeFamily(std::string name, std::string help,
                                    prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

std::vector<prometheus::ClientMetric::Label> ToLabels(const Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) out.push_back({name, value});
  return out;
}

}  // namespace

prometheus::MetricFamily CounterFamily(std::string name, std::string help) {
  return MakeFamily(std::move(name), std::move(help), prometheus::MetricType::Counter);
}

prometheus::MetricFamily GaugeFamily(std::string name, std::string help) {
  return MakeFamily(std::move(name), std::move(help), prometheus::MetricType::Gauge);
}

prometheus::MetricFamily HistogramFamily(std::string name, std::string help) {
  return MakeFamily(std::move(name), std::move(help), prometheus::MetricType::Histogram);
}

void AddCounter(prometheus::MetricFamily* family, const Labels& labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = ToLabels(labels);
  metric.counter.value = value;
  family->metric.push_back(std::move(metric));
}

void AddGauge(prometheus::MetricFamily* family, const Labels& labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = ToLabels(labels);
  metric.gauge.value = value;
  family->metric.push_back(std::move(metric));
}

void AddLog2Histogram(prometheus::MetricFamily* family, const Labels& labels,
                      const std::vector<uint64_t>& slots, uint64_t sum_raw, double unit,
                      uint64_t above_last_edge) {
  prometheus::ClientMetric metric;
  metric.label = ToLabels(labels);
  auto& hist = metric.histogram;
  hist.bucket.reserve(slots.size() + 1);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    cumulative += slots[i];
    // ldexp scales by an exact power of two, so the edge is the double nearest 2^i * unit
    // (1e-9 at slot 10 prints as 1.024e-06, not 1.0240000000000001e-06).
    hist.bucket.push_back({cumulative, std::ldexp(unit, static_cast<int>(i))});
  }
  // An explicit +Inf bucket: the writer then adds none of its own, and the data model is
  // complete for any other serializer too.
  cumulative += above_last_edge;
  hist.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  hist.sample_count = cumulative;
  hist.sample_sum = static_cast<double>(sum_raw) * unit;
  family->metric.push_back(std::move(metric));
}

void AddHistogram(prometheus::MetricFamily* family, const Labels& labels,
                  const std::vector<double>& edges, const std::vector<uint64_t>& in_bucket,
                  uint64_t above_last_edge, double sum) {
  prometheus::ClientMetric metric;
  metric.label = ToLabels(labels);
  auto& hist = metric.histogram;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < edges.size() && i < in_bucket.size(); ++i) {
    cumulative += in_bucket[i];
    hist.bucket.push_back({cumulative, edges[i]});
  }
  cumulative += above_last_edge;
  hist.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  hist.sample_count = cumulative;
  hist.sample_sum = sum;
  family->metric.push_back(std::move(metric));
}

std::string SerializeText(const std::vector<prometheus::MetricFamily>& families) {
  return WriteTextExposition(families);
}

void SerializeTextInto(const std::vector<prometheus::MetricFamily>& families, std::string* out) {
  AppendTextExposition(families, out);
}

}  // namespace stagewatch::exporters
