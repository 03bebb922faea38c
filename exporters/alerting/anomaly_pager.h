// Turns anomaly changes into direct pages to Alertmanager: fire on start, resolve on end.
#pragma once

#include "anomaly/anomaly_engine.h"
#include "exporters/alerting/alertmanager_client.h"

namespace stagewatch::exporters {

// The page each rule sends, named like the Prometheus rule for the same condition.
const char* AlertNameForRule(AnomalyRule rule);

class AnomalyPager {
 public:
  explicit AnomalyPager(AlertmanagerClient* client) : client_(client) {}
  void OnChange(const AnomalyChange& change);

 private:
  AlertmanagerClient* const client_;
};

}  // namespace stagewatch::exporters
