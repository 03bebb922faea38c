#include "exporters/alerting/anomaly_pager.h"

#include "absl/strings/str_cat.h"
#include "string_util.h"

namespace stagewatch::exporters {
namespace {

// OOM kills and a short limit ETA (a kill on its way) page; the rest warn.
const char* Severity(AnomalyRule rule) {
  return rule == AnomalyRule::kOomKill || rule == AnomalyRule::kLimitEta ? "critical" : "warning";
}

const char* What(AnomalyRule rule) {
  switch (rule) {
    case AnomalyRule::kMemoryClimb: return "memory is climbing far faster than usual";
    case AnomalyRule::kLimitEta: return "memory will reach its limit soon";
    case AnomalyRule::kPressureSpike: return "tasks are stalled on memory";
    case AnomalyRule::kFaultStorm: return "major page faults far above usual";
    case AnomalyRule::kCpuStarvation: return "tasks wait far longer than usual for a CPU";
    case AnomalyRule::kOomKill: return "a process was OOM-killed";
    case AnomalyRule::kSlowRun: return "a run is slower than usual";
  }
  return "";
}

}  // namespace

const char* AlertNameForRule(AnomalyRule rule) {
  switch (rule) {
    case AnomalyRule::kMemoryClimb: return "StagewatchMemoryClimb";
    case AnomalyRule::kLimitEta: return "StagewatchMemoryLimitETAShort";
    case AnomalyRule::kPressureSpike: return "StagewatchMemoryPressureHigh";
    case AnomalyRule::kFaultStorm: return "StagewatchFaultStorm";
    case AnomalyRule::kCpuStarvation: return "StagewatchCPUStarvation";
    case AnomalyRule::kOomKill: return "StagewatchOOMKill";
    case AnomalyRule::kSlowRun: return "StagewatchRunSlowerThanUsual";
  }
  return "StagewatchAnomaly";
}

std::string StagePageUrl(const std::string& external_url, const std::string& stage) {
  return absl::StrCat(external_url, "/runs?stage=", UrlEncode(stage));
}

void AnomalyPager::OnChange(const AnomalyChange& c) {
  std::map<std::string, std::string> labels = {{"pipeline_stage", c.stage.name},
                                               {"severity", Severity(c.rule)},
                                               {"source", "agent"}};
  if (!c.stage.pipeline.empty()) labels["pipeline"] = c.stage.pipeline;
  if (!c.active) {
    client_->Resolve(AlertNameForRule(c.rule), labels);
    return;
  }
  // The same annotations as the rule's page for the condition, so that whichever copy
  // notifies, on-call gets the runbook.
  std::map<std::string, std::string> annotations = {
      {"summary", absl::StrCat("Stage ", c.stage.name, ": ", What(c.rule))},
      {"description", c.summary}};
  if (!links_.runbook_url_base.empty()) {
    annotations["runbook_url"] =
        absl::StrCat(links_.runbook_url_base, "/", AlertNameForRule(c.rule), ".md");
  }
  client_->Fire({.alertname = AlertNameForRule(c.rule),
                 .labels = labels,
                 .annotations = std::move(annotations),
                 .generator_url = StagePageUrl(links_.external_url, c.stage.name),
                 .starts_at = c.at});
}

}  // namespace stagewatch::exporters
