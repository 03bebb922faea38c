// Reading one series' value back out of collected metric families, for collector tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace stagewatch::testing {

using SeriesLabels = std::map<std::string, std::string>;

// The value of the series of `name` with exactly `labels`; -1 if there is none.
inline double ValueOf(const std::vector<prometheus::MetricFamily>& families,
                      const std::string& name, const SeriesLabels& labels) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      SeriesLabels got;
      for (const auto& l : m.label) got[l.name] = l.value;
      if (got != labels) continue;
      return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

}  // namespace stagewatch::testing
