// The Prometheus text exposition format 0.0.4, written straight into one string.
//
// The output is byte for byte what prometheus-cpp 1.0.1's TextSerializer writes (doubles as
// printf's "%.16g", "+Inf", "-Inf", "Nan", label values with \\, \" and \n escaped, a +Inf
// bucket added where a histogram has none), except that HELP text has its backslashes and
// newlines escaped as the format asks, which TextSerializer leaves out, and that bucket bounds
// and quantiles are the shortest text that reads back exactly, where "%.16g" adds noise
// (le="8.192000000000001e-06"). TextSerializer goes
// through an ostream and glibc's printf for every number, an eighth of a scrape's CPU at
// 1,000 cgroups; this writes integers with to_chars and other doubles with to_chars at
// printf's precision.
#pragma once

#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace stagewatch::exporters {

std::string WriteTextExposition(const std::vector<prometheus::MetricFamily>& families);
// Appends it to *out: a buffer kept between scrapes has the room already.
void AppendTextExposition(const std::vector<prometheus::MetricFamily>& families,
                          std::string* out);

// One sample value as the exposition writes it (exposed for tests).
void AppendSampleValue(std::string* out, double value);
// A bucket bound (le) or quantile label: the shortest text that reads back as exactly this
// double ("8.192e-06", where "%.16g" writes 8.192000000000001e-06), as the Prometheus
// clients write them; infinities and NaN as sample values are.
void AppendBoundValue(std::string* out, double value);

}  // namespace stagewatch::exporters
