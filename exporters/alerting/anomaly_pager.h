// Turns anomaly changes into direct pages to Alertmanager: fire on start, resolve on end.
#pragma once

#include <string>
#include <utility>

#include "anomaly/anomaly_engine.h"
#include "exporters/alerting/alertmanager_client.h"

namespace stagewatch::exporters {

// The page each rule sends, named like the Prometheus rule for the same condition.
const char* AlertNameForRule(AnomalyRule rule);

// Where a page's links point.
struct PageLinks {
  std::string runbook_url_base;  // alerting.runbook_url_base; "" for no runbook_url
  std::string external_url;      // --web.external-url, without a trailing slash
};

// The link to the agent's page of a stage (its runs), for a page's generatorURL.
std::string StagePageUrl(const std::string& external_url, const std::string& stage);

class AnomalyPager {
 public:
  AnomalyPager(AlertmanagerClient* client, PageLinks links)
      : client_(client), links_(std::move(links)) {}
  void OnChange(const AnomalyChange& change);

 private:
  AlertmanagerClient* const client_;
  const PageLinks links_;
};

}  // namespace stagewatch::exporters
