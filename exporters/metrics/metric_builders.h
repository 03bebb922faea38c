// Small builders for prometheus-cpp's data model, so collectors read as lists of metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace stagewatch::exporters {

using Labels = std::vector<std::pair<std::string, std::string>>;

prometheus::MetricFamily CounterFamily(std::string name, std::string help);
prometheus::MetricFamily GaugeFamily(std::string name, std::string help);
prometheus::MetricFamily HistogramFamily(std::string name, std::string help);

void AddCounter(prometheus::MetricFamily* family, const Labels& labels, double value);
void AddGauge(prometheus::MetricFamily* family, const Labels& labels, double value);

// A classic Prometheus histogram from in-kernel log2 slots. Slot i counts values v with
// 2^(i-1) < v <= 2^i (slot 0 holds v <= 1), so its upper edge is le = 2^i * unit. Buckets are
// emitted cumulatively for every slot in `slots` (a fixed-size array, so the bucket set is the
// same on every scrape), then +Inf; `sum_raw` is in the same raw unit and is scaled by `unit`
// (e.g. 1e-9 for ns → s). `above_last_edge` counts values beyond the last slot's edge: they
// appear only in +Inf, so no bucket claims a value larger than its le.
void AddLog2Histogram(prometheus::MetricFamily* family, const Labels& labels,
                      const std::vector<uint64_t>& slots, uint64_t sum_raw, double unit,
                      uint64_t above_last_edge = 0);

// A classic Prometheus histogram from per-bucket counts (not cumulative) at upper `edges`,
// then +Inf with `above_last_edge` more; `sum` in the unit of the edges.
void AddHistogram(prometheus::MetricFamily* family, const Labels& labels,
                  const std::vector<double>& edges, const std::vector<uint64_t>& in_bucket,
                  uint64_t above_last_edge, double sum);

// Prometheus text exposition format 0.0.4.
std::string SerializeText(const std::vector<prometheus::MetricFamily>& families);
// The same, appended to *out (a buffer kept between scrapes).
void SerializeTextInto(const std::vector<prometheus::MetricFamily>& families, std::string* out);

}  // namespace stagewatch::exporters
