#include "exporters/metrics/collector.h"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "exporters/metrics/metric_builders.h"

namespace stagewatch::exporters {
namespace {

// Output families in first-seen order, so two collectors sharing a name yield one family
// (a repeated name is invalid exposition).
class FamilyMerger {
 public:
  // Returns an error naming each family dropped for clashing in type with an earlier one.
  absl::Status Merge(std::vector<prometheus::MetricFamily> families) {
    absl::Status status;
    for (auto& family : families) {
      auto [it, inserted] = index_.try_emplace(family.name, out_.size());
      if (inserted) {
        out_.push_back(std::move(family));
        continue;
      }
      prometheus::MetricFamily& existing = out_[it->second];
      if (existing.type != family.type) {
        // Mixing types under one name would mislabel samples; keep the first.
        status.Update(absl::InternalError(
            absl::StrCat("metric family ", family.name, " dropped: its type clashes with ",
                         "an earlier family of the same name")));
        continue;
      }
      for (auto& metric : family.metric) existing.metric.push_back(std::move(metric));
    }
    return status;
  }

  std::vector<prometheus::MetricFamily> Take() { return std::move(out_); }

 private:
  std::vector<prometheus::MetricFamily> out_;
  absl::flat_hash_map<std::string, size_t> index_;
};

}  // namespace

void CollectorRegistry::Add(std::unique_ptr<Collector> collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

void CollectorRegistry::SetErrorHandler(ErrorHandler handler) {
  absl::MutexLock lock(&mu_);
  on_error_ = std::move(handler);
}

std::vector<prometheus::MetricFamily> CollectorRegistry::CollectAll() {
  absl::MutexLock lock(&mu_);
  FamilyMerger merger;
  auto duration = GaugeFamily("stagewatch_scrape_collector_duration_seconds",
                              "Duration of a collector scrape.");
  auto success = GaugeFamily("stagewatch_scrape_collector_success",
                             "Whether a collector succeeded.");
  // Bound here, where the lock is visibly held, for the analysis's sake.
  const ErrorHandler* on_error = &on_error_;
  auto report = [on_error](std::string_view name, const absl::Status& status) {
    if (*on_error) (*on_error)(name, status);
  };

  for (const auto& collector : collectors_) {
    const std::string name(collector->name());
    std::vector<prometheus::MetricFamily> families;
    absl::Status status;
    const auto start = std::chrono::steady_clock::now();
    try {
      status = collector->Collect(&families);
    } catch (const std::exception& e) {
      // One broken collector must not fail the whole scrape.
      status = absl::InternalError(absl::StrCat("exception: ", e.what()));
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;

    bool ok = status.ok();
    if (!ok) report(name, status);
    // What a failing collector appended is still exported.
    if (absl::Status merged = merger.Merge(std::move(families)); !merged.ok()) {
      ok = false;
      report(name, merged);
    }
    AddGauge(&duration, {{"collector", name}}, elapsed.count());
    AddGauge(&success, {{"collector", name}}, ok ? 1.0 : 0.0);
  }

  std::vector<prometheus::MetricFamily> self;
  self.push_back(std::move(duration));
  self.push_back(std::move(success));
  if (absl::Status merged = merger.Merge(std::move(self)); !merged.ok()) {
    report("registry", merged);
  }
  return merger.Take();
}

}  // namespace stagewatch::exporters
