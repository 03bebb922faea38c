#include "exporters/metrics/text_exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace stagewatch::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Significant digits TextSerializer asks of printf (max_digits10 - 1).
constexpr int kPrecision = std::numeric_limits<double>::max_digits10 - 1;

template <typename Integer>
void AppendInteger(std::string* out, Integer value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, end);
}

// HELP escapes backslash and newline only.
void AppendHelp(std::string* out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// Label values escape backslash, double quote and newline.
void AppendLabelValue(std::string* out, std::string_view value) {
  for (char c : value) {
    if (c == '\n') {
      out->append("\\n");
      continue;
    }
    if (c == '\\' || c == '"') out->push_back('\\');
    out->push_back(c);
  }
}

// Where one metric's lines start: the family name, a suffix, and the label set (with an
// optional extra label such as le), then the space before the value.
class LineHead {
 public:
  LineHead(std::string* out, const MetricFamily& family, const ClientMetric& metric)
      : out_(out), family_(family), metric_(metric) {}

  void Write(std::string_view suffix = {}, std::string_view extra_name = {},
             std::string_view extra_value = {}) const {
    out_->append(family_.name).append(suffix);
    if (!metric_.label.empty() || !extra_name.empty()) {
      out_->push_back('{');
      const char* separator = "";
      for (const auto& label : metric_.label) {
        out_->append(separator).append(label.name).append("=\"");
        AppendLabelValue(out_, label.value);
        out_->push_back('"');
        separator = ",";
      }
      if (!extra_name.empty()) {
        out_->append(separator).append(extra_name).append("=\"");
        AppendLabelValue(out_, extra_value);
        out_->push_back('"');
      }
      out_->push_back('}');
    }
    out_->push_back(' ');
  }

  void WriteTail() const {
    if (metric_.timestamp_ms != 0) {
      out_->push_back(' ');
      AppendInteger(out_, metric_.timestamp_ms);
    }
    out_->push_back('\n');
  }

 private:
  std::string* const out_;
  const MetricFamily& family_;
  const ClientMetric& metric_;
};

std::string BoundText(double value) {
  std::string text;
  AppendBoundValue(&text, value);
  return text;
}

void WriteSingle(std::string* out, const MetricFamily& family, const ClientMetric& metric,
                 double value) {
  LineHead head(out, family, metric);
  head.Write();
  AppendSampleValue(out, value);
  head.WriteTail();
}

void WriteSummary(std::string* out, const MetricFamily& family, const ClientMetric& metric) {
  LineHead head(out, family, metric);
  head.Write("_count");
  AppendInteger(out, metric.summary.sample_count);
  head.WriteTail();
  head.Write("_sum");
  AppendSampleValue(out, metric.summary.sample_sum);
  head.WriteTail();
  for (const auto& q : metric.summary.quantile) {
    head.Write({}, "quantile", BoundText(q.quantile));
    AppendSampleValue(out, q.value);
    head.WriteTail();
  }
}

void WriteHistogram(std::string* out, const MetricFamily& family, const ClientMetric& metric) {
  const auto& hist = metric.histogram;
  LineHead head(out, family, metric);
  head.Write("_count");
  AppendInteger(out, hist.sample_count);
  head.WriteTail();
  head.Write("_sum");
  AppendSampleValue(out, hist.sample_sum);
  head.WriteTail();
  double last = -std::numeric_limits<double>::infinity();
  std::string le;
  for (const auto& bucket : hist.bucket) {
    le.clear();
    AppendBoundValue(&le, bucket.upper_bound);
    head.Write("_bucket", "le", le);
    AppendInteger(out, bucket.cumulative_count);
    head.WriteTail();
    last = bucket.upper_bound;
  }
  if (last != std::numeric_limits<double>::infinity()) {
    head.Write("_bucket", "le", "+Inf");
    AppendInteger(out, hist.sample_count);
    head.WriteTail();
  }
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Untyped:
      return "untyped";
    case MetricType::Histogram:
      return "histogram";
  }
  return "untyped";
}

void WriteFamily(std::string* out, const MetricFamily& family) {
  if (!family.help.empty()) {
    out->append("# HELP ").append(family.name).push_back(' ');
    AppendHelp(out, family.help);
    out->push_back('\n');
  }
  out->append("# TYPE ").append(family.name).push_back(' ');
  out->append(TypeName(family.type)).push_back('\n');
  for (const ClientMetric& metric : family.metric) {
    switch (family.type) {
      case MetricType::Counter:
        WriteSingle(out, family, metric, metric.counter.value);
        break;
      case MetricType::Gauge:
        WriteSingle(out, family, metric, metric.gauge.value);
        break;
      case MetricType::Untyped:
        WriteSingle(out, family, metric, metric.untyped.value);
        break;
      case MetricType::Summary:
        WriteSummary(out, family, metric);
        break;
      case MetricType::Histogram:
        WriteHistogram(out, family, metric);
        break;
    }
  }
}

}  // namespace

void AppendSampleValue(std::string* out, double value) {
  if (std::isnan(value)) {
    out->append("Nan");
  } else if (std::isinf(value)) {
    out->append(value < 0 ? "-Inf" : "+Inf");
  } else if (value == std::trunc(value) && std::fabs(value) < 1e15 &&
             !(value == 0 && std::signbit(value))) {
    // Whole numbers of up to 15 digits (counts, bytes) print the same as "%.16g" would.
    AppendInteger(out, static_cast<int64_t>(value));
  } else {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                   std::chars_format::general, kPrecision);
    out->append(buffer, end);
  }
}

void AppendBoundValue(std::string* out, double value) {
  if (!std::isfinite(value)) return AppendSampleValue(out, value);
  // The shortest digits that read back as this double, in scientific form first: its
  // exponent decides the form, as Go's strconv.FormatFloat(v, 'g', -1, 64) decides it.
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                 std::chars_format::scientific);
  const std::string_view scientific(buffer, end - buffer);
  int exponent = 0;
  const size_t e = scientific.rfind('e');
  std::from_chars(scientific.data() + e + (scientific[e + 1] == '+' ? 2 : 1), end, exponent);
  if (exponent < -4 || exponent >= 6) {
    out->append(scientific);
    return;
  }
  auto [fixed_end, fixed_ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  out->append(buffer, fixed_end);
}

std::string WriteTextExposition(const std::vector<MetricFamily>& families) {
  std::string out;
  AppendTextExposition(families, &out);
  return out;
}

void AppendTextExposition(const std::vector<MetricFamily>& families, std::string* out) {
  size_t metrics = 0;
  for (const MetricFamily& family : families) metrics += family.metric.size();
  out->reserve(out->size() + families.size() * 96 + metrics * 80);
  for (const MetricFamily& family : families) WriteFamily(out, family);
}

}  // namespace stagewatch::exporters
