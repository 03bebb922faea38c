// The CPU time of writing one /metrics exposition shaped like the 1,000-cgroup scrape of
// bench/cgroup_scale.sh (51 stages, two 27-bucket histograms and about 100 other series
// each, ~5,600 lines): prometheus-cpp's TextSerializer against the agent's own writer
// (exporters/metrics/text_exposition.h). Alternates the two, checks they give the same bytes, and
// prints the median CPU time per exposition of each.
// Usage: exposition_cost [passes]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/text_exposition.h"
#include "prometheus/text_serializer.h"

namespace {

using namespace stagewatch::exporters;

double CpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<prometheus::MetricFamily> ScrapeShapedFamilies() {
  std::mt19937_64 random(9);
  std::vector<prometheus::MetricFamily> families;
  for (const char* name : {"stagewatch_runqueue_latency_seconds",
                           "stagewatch_memory_reclaim_stall_seconds"}) {
    auto h = HistogramFamily(name, "A log2 histogram.");
    for (int s = 0; s < 51; s++) {
      std::vector<uint64_t> slots(26);
      for (auto& n : slots) n = random() % 5000;
      AddLog2Histogram(&h, {{"pipeline_stage", "stage_" + std::to_string(s)}}, slots,
                       random() % 100000000000, 1e-9, random() % 3);
    }
    families.push_back(std::move(h));
  }
  // Counters of whole numbers and gauges of bytes, seconds and ratios, 2 to 7 per stage.
  for (int f = 0; f < 18; f++) {
    const bool counter = f % 2 == 0;
    auto family = counter ? CounterFamily("stagewatch_c" + std::to_string(f) + "_total", "C.")
                          : GaugeFamily("stagewatch_g" + std::to_string(f), "G.");
    const int per_stage = 2 + f % 6;
    for (int s = 0; s < 51; s++) {
      for (int k = 0; k < per_stage; k++) {
        const double value = counter ? static_cast<double>(random() % 10000000)
                             : k % 2  ? static_cast<double>(random() % 1000000) / 997
                                      : static_cast<double>(random() % (1ull << 34));
        Labels labels = {{"pipeline_stage", "stage_" + std::to_string(s)},
                         {"kind", "k" + std::to_string(k)}};
        if (counter) {
          AddCounter(&family, labels, value);
        } else {
          AddGauge(&family, labels, value);
        }
      }
    }
    families.push_back(std::move(family));
  }
  return families;
}

}  // namespace

int main(int argc, char** argv) {
  const int passes = argc > 1 ? std::atoi(argv[1]) : 21;
  const auto families = ScrapeShapedFamilies();
  std::vector<double> reference_ms, writer_ms;
  size_t bytes = 0;
  for (int pass = 0; pass < passes; pass++) {
    double start = CpuMs();
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    const std::string reference = out.str();
    reference_ms.push_back(CpuMs() - start);
    start = CpuMs();
    const std::string written = WriteTextExposition(families);
    writer_ms.push_back(CpuMs() - start);
    if (written != reference) {
      std::fprintf(stderr, "the two expositions differ\n");
      return 1;
    }
    bytes = written.size();
  }
  const double a = Median(reference_ms), b = Median(writer_ms);
  std::printf("%zu bytes, %d passes: TextSerializer %.3f ms, writer %.3f ms (%.3f x)\n", bytes,
              passes, a, b, b / a);
  return 0;
}
