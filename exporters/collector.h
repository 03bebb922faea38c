// One collector per signal, each switchable with --collector.<name>, and the registry that
// times them and reports their success, as node_exporter does.
#pragma once

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
  void Add(std::unique_ptr<Collector> collector);

  // Runs every collector and appends
  //   stagewatch_scrape_collector_duration_seconds{collector}
  //   stagewatch_scrape_collector_success{collector}
  std::vector<prometheus::MetricFamily> CollectAll();

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Collector>> collectors_;
};

}  // namespace stagewatch::exporters
