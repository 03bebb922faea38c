// Pages directly: an Alertmanager API v2 client that the agent's detectors fire and resolve
// alerts through, without a Prometheus rule in between.
//
// Fire/Resolve only take a mutex briefly and append to a bounded queue, so collectors are never
// blocked. One sender thread per Alertmanager URL (an HA pair gets every alert) drains the
// queue as soon as it is signalled, batching what is queued into one POST /api/v2/alerts, and
// retries failures with exponential backoff and jitter, keeping the batch. One URL down never
// delays another. Active alerts are re-sent every resend_interval with their original
// startsAt, as Alertmanager needs to keep them active.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "exporters/metrics/collector.h"
#include "config/alertmanager_url.h"

namespace stagewatch::exporters {

// TLS towards an https:// Alertmanager. The server's certificate is verified against the
// system's CAs, or ca_file; a client certificate is sent when cert_file and key_file are set.
struct AlertmanagerTlsOptions {
  std::string ca_file, cert_file, key_file;
  bool insecure_skip_verify = false;
  std::string min_version;  // "TLS12" (the default when empty) or "TLS13"
};

struct AlertmanagerOptions {
  std::vector<std::string> urls;  // e.g. "http://127.0.0.1:9093"; an HA pair gets every alert
  std::string basic_auth_user, basic_auth_password;  // optional
  std::string bearer_token;                          // optional (exclusive with basic auth)
  AlertmanagerTlsOptions tls;
  absl::Duration timeout = absl::Seconds(5);          // connect, read and write, each
  absl::Duration resend_interval = absl::Seconds(30);  // active alerts are re-sent
  absl::Duration initial_backoff = absl::Milliseconds(200), max_backoff = absl::Seconds(30);
  size_t queue_capacity = 1024;  // bounded; overflow drops the oldest and is counted
  // Labels every alert carries unless it has its own of the name, as Prometheus'
  // external_labels: alerting.labels, and `instance` (hostname:port unless they set it).
  std::map<std::string, std::string> labels;
};

struct PageAlert {
  std::string alertname;                            // e.g. StagewatchOOMKill
  std::map<std::string, std::string> labels;       // pipeline_stage, severity, ... (alertname,
                                                    // instance added)
  std::map<std::string, std::string> annotations;  // summary, description, runbook_url
  std::string generator_url;                        // the page that tells more; "" for none
  absl::Time starts_at;                             // the Unix epoch (unset) means now
  std::optional<absl::Time> ends_at;                // set when resolved
};

// A point-in-time view of the client's counters, for the collector and tests.
struct AlertmanagerStats {
  struct Target {
    std::string url;  // AlertmanagerUrl::display
    uint64_t requests_success = 0;
    uint64_t requests_failure = 0;
    std::optional<absl::Time> last_success;
  };
  std::vector<Target> targets;
  uint64_t alerts_dropped = 0;
  size_t queue_length = 0;
};

class AlertmanagerClient {
 public:
  // Options should have passed Validate(); URLs that do not are logged and left out, and with
  // no URL at all the client is disabled (Fire and Resolve do nothing).
  explicit AlertmanagerClient(AlertmanagerOptions options);
  ~AlertmanagerClient();  // stops the sender threads (aborting a request in flight) and joins
  AlertmanagerClient(const AlertmanagerClient&) = delete;
  AlertmanagerClient& operator=(const AlertmanagerClient&) = delete;

  // Checks every URL and setting; the error names the offending URL and what to write instead.
  // No URL is valid: the client is disabled.
  static absl::StatusOr<std::vector<AlertmanagerUrl>> Validate(const AlertmanagerOptions& options);

  // Non-blocking. Keyed by (alertname, labels). While active the alert is re-sent every
  // resend_interval with the startsAt of its first Fire; firing an active alert again with the
  // same annotations sends nothing new, with changed annotations sends the update at once.
  // A PageAlert with ends_at set is a resolve.
  void Fire(PageAlert alert);
  // Non-blocking. Sends the alert once with endsAt=now (and its original startsAt and
  // annotations when it was active), then forgets it.
  void Resolve(const std::string& alertname, const std::map<std::string, std::string>& labels);

  bool enabled() const { return !targets_.empty(); }
  AlertmanagerStats stats() const;

 private:
  using LabelSet = std::map<std::string, std::string>;  // alertname and instance included
  struct Event {  // one fire or resolve, as sent
    LabelSet labels;
    std::map<std::string, std::string> annotations;
    std::string generator_url;
    absl::Time starts_at;
    std::optional<absl::Time> ends_at;
  };
  struct Active {  // what a resend sends
    std::map<std::string, std::string> annotations;
    std::string generator_url;
    absl::Time starts_at;
  };
  struct Target;  // one URL and its sender thread

  LabelSet FinalLabels(const std::string& alertname,
                       const std::map<std::string, std::string>& labels) const;
  void Enqueue(Event event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TrimQueue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(Target* target);

  const AlertmanagerOptions options_;
  mutable std::atomic<bool> warned_bad_label_{false};
  std::vector<std::unique_ptr<Target>> targets_;  // fixed after construction

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::map<LabelSet, Active> active_ ABSL_GUARDED_BY(mu_);
  // Events not yet taken by every target; queue_.front() has sequence number head_seq_.
  std::deque<Event> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t head_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// Exposes an AlertmanagerClient's counters. The client must outlive the collector.
//   stagewatch_alertmanager_requests_total{alertmanager, result="success|failure"}
//   stagewatch_alertmanager_alerts_dropped_total
//   stagewatch_alertmanager_queue_length
//   stagewatch_alertmanager_last_success_timestamp_seconds{alertmanager}
class AlertmanagerCollector : public Collector {
 public:
  explicit AlertmanagerCollector(const AlertmanagerClient* client) : client_(client) {}
  std::string_view name() const override { return "alertmanager"; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override;

 private:
  const AlertmanagerClient* client_;
};

}  // namespace stagewatch::exporters
