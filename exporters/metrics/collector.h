// One collector per signal, each switchable with --collector.<name>, and the registry that
// times them and reports their success, as node_exporter does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/metric_family.h"

namespace stagewatch::exporters {

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  // Appends this collector's families. On error the families appended are still exported
  // and the collector's success gauge reads 0.
  virtual absl::Status Collect(std::vector<prometheus::MetricFamily>* out) = 0;
};

// Thread-safe; scrapes are serialised so collectors need no locking of their own.
class CollectorRegistry {
 public:
  // Told of each collector error (and of a family whose type clashes with an earlier one of
  // the same name). Called under the registry's lock, so it must not call back into it.
  using ErrorHandler =
      std::function<void(std::string_view collector, const absl::Status& status)>;

  void Add(std::unique_ptr<Collector> collector);
  void SetErrorHandler(ErrorHandler handler);

  // Runs every collector and appends
  //   stagewatch_scrape_collector_duration_seconds{collector}
  //   stagewatch_scrape_collector_success{collector}
  // Families with the same name from different collectors are merged into one.
  std::vector<prometheus::MetricFamily> CollectAll();

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Collector>> collectors_ ABSL_GUARDED_BY(mu_);
  ErrorHandler on_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch::exporters
