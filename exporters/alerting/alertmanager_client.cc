#include "exporters/alerting/alertmanager_client.h"

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bounded_file.h"
#include "config/config_validate.h"
#include "exporters/metrics/metric_builders.h"
#include "exporters/alerting/alert_poster.h"
#include "log.h"
#include "json_text.h"
#include "units.h"

namespace stagewatch::exporters {

namespace {

// A down Alertmanager fails every few seconds at most; one warning a minute is enough.
constexpr absl::Duration kWarnEvery = absl::Minutes(1);

// A client certificate and key go together; a CA file must be readable now, not at the
// first page. min_version is "TLS12" or "TLS13", as in the web configuration.
absl::Status ValidateTls(const AlertmanagerTlsOptions& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "alertmanager: tls.cert_file and tls.key_file must be set together");
  }
  for (const std::string& file : {tls.ca_file, tls.cert_file, tls.key_file}) {
    if (file.empty()) continue;
    if (auto text = ReadBoundedFile(file, "alertmanager TLS file"); !text.ok()) {
      return text.status();
    }
  }
  if (!tls.min_version.empty() && tls.min_version != "TLS12" && tls.min_version != "TLS13") {
    return absl::InvalidArgumentError(absl::StrCat(
        "alertmanager: tls.min_version \"", tls.min_version, "\" must be TLS12 or TLS13"));
  }
  return absl::OkStatus();
}

nlohmann::json AlertJson(const std::map<std::string, std::string>& labels,
                         const std::map<std::string, std::string>& annotations,
                         const std::string& generator_url, absl::Time starts_at,
                         const std::optional<absl::Time>& ends_at) {
  nlohmann::json alert = {{"labels", labels},
                          {"annotations", annotations},
                          {"startsAt", FormatRfc3339(starts_at)},
                          {"generatorURL", generator_url}};
  if (ends_at) alert["endsAt"] = FormatRfc3339(*ends_at);
  return alert;
}
}  // namespace

// Everything but `url`, `poster`, `thread`, `cv` and the logging state is guarded by the
// client's mu_. The logging state and `rng` belong to the sender thread.
struct AlertmanagerClient::Target {
  AlertmanagerUrl url;
  std::unique_ptr<AlertPoster> poster;
  absl::CondVar cv;
  std::thread thread;

  uint64_t next_seq = 0;                // the next queued event this target has not taken
  std::map<LabelSet, Event> batch;      // being sent, coalesced: the latest event per alert
  bool resend = false;                  // the next request carries every active alert
  absl::Time next_resend = absl::InfiniteFuture();
  absl::Time retry_at = absl::InfinitePast();
  int consecutive_failures = 0;
  uint64_t success = 0, failure = 0;
  std::optional<absl::Time> last_success;

  absl::Time last_warn = absl::InfinitePast();
  uint64_t suppressed_warnings = 0;
  std::mt19937_64 rng{std::random_device{}()};
};

absl::StatusOr<std::vector<AlertmanagerUrl>> AlertmanagerClient::Validate(
    const AlertmanagerOptions& options) {
  std::vector<AlertmanagerUrl> urls;
  for (const std::string& raw : options.urls) {
    absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl(raw);
    if (!url.ok()) return url.status();
    for (const AlertmanagerUrl& seen : urls) {
      if (seen.display == url->display) {
        return absl::InvalidArgumentError(absl::StrCat(
            "alertmanager URL \"", RedactUrl(raw), "\" is listed twice (as ", seen.display, ")"));
      }
    }
    urls.push_back(*std::move(url));
  }
  if (!options.bearer_token.empty() &&
      (!options.basic_auth_user.empty() || !options.basic_auth_password.empty())) {
    return absl::InvalidArgumentError(
        "alertmanager: set either basic auth (user and password) or a bearer token, not both");
  }
  if (options.basic_auth_user.empty() && !options.basic_auth_password.empty()) {
    return absl::InvalidArgumentError(
        "alertmanager: a basic auth password is set without a user");
  }
  auto positive = [](absl::Duration d, std::string_view what) -> absl::Status {
    if (d > absl::ZeroDuration()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("alertmanager: ", std::string(what),
                                                   " must be positive, got ",
                                                   absl::FormatDuration(d)));
  };
  for (auto [d, what] : {std::pair{options.timeout, "timeout"},
                         std::pair{options.resend_interval, "resend interval"},
                         std::pair{options.initial_backoff, "initial backoff"}}) {
    if (absl::Status s = positive(d, what); !s.ok()) return s;
  }
  if (options.max_backoff < options.initial_backoff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "alertmanager: max backoff (", absl::FormatDuration(options.max_backoff),
        ") is below the initial backoff (", absl::FormatDuration(options.initial_backoff), ")"));
  }
  if (options.queue_capacity == 0) {
    return absl::InvalidArgumentError("alertmanager: queue capacity must be at least 1");
  }
  if (absl::Status s = ValidateTls(options.tls); !s.ok()) return s;
  return urls;
}

AlertmanagerClient::AlertmanagerClient(AlertmanagerOptions options)
    : options_(std::move(options)) {
  std::vector<AlertmanagerUrl> urls;
  if (absl::StatusOr<std::vector<AlertmanagerUrl>> all = Validate(options_); all.ok()) {
    urls = *std::move(all);
  } else {
    // Keep what can be used; the caller was meant to Validate first.
    Log::Error("alertmanager options are not valid", {{"err", all.status().message()}});
    for (const std::string& raw : options_.urls) {
      absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl(raw);
      if (url.ok()) urls.push_back(*std::move(url));
    }
    if (options_.queue_capacity == 0 || options_.timeout <= absl::ZeroDuration() ||
        options_.resend_interval <= absl::ZeroDuration() ||
        options_.initial_backoff <= absl::ZeroDuration()) {
      urls.clear();
    }
  }
  for (AlertmanagerUrl& url : urls) {
    auto target = std::make_unique<Target>();
    target->poster = std::make_unique<AlertPoster>(url, options_);
    target->url = std::move(url);
    targets_.push_back(std::move(target));
  }
  for (auto& target : targets_) {
    Target* t = target.get();
    t->thread = std::thread([this, t] { Run(t); });
  }
}

AlertmanagerClient::~AlertmanagerClient() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (auto& t : targets_) {
    t->cv.SignalAll();
    t->poster->Abort();  // thread-safe: ends a request in flight at once
  }
  for (auto& t : targets_) {
    if (t->thread.joinable()) t->thread.join();
  }
}

AlertmanagerClient::LabelSet AlertmanagerClient::FinalLabels(
    const std::string& alertname, const std::map<std::string, std::string>& labels) const {
  LabelSet out;
  for (const auto& [name, value] : labels) {
    if (value.empty()) continue;  // an empty label is an absent one
    if (!config_internal::CheckLabelName(name).ok()) {
      // A bad name would make Alertmanager reject the whole batch (HTTP 400). It is a bug in
      // the caller, so say it once rather than on every Fire.
      if (!warned_bad_label_.exchange(true)) {
        Log::Warn("alertmanager: label left out, its name is not valid",
                  {{"label", name}, {"alertname", alertname}});
      }
      continue;
    }
    out.emplace(name, value);
  }
  out["alertname"] = alertname;
  for (const auto& [name, value] : options_.labels) out.emplace(name, value);
  return out;
}

void AlertmanagerClient::Enqueue(Event event) {
  if (queue_.size() >= options_.queue_capacity) {
    queue_.pop_front();
    ++head_seq_;
    ++dropped_;
  }
  queue_.push_back(std::move(event));
  for (auto& t : targets_) t->cv.Signal();
}

void AlertmanagerClient::TrimQueue() {
  uint64_t min_seq = head_seq_ + queue_.size();
  for (const auto& t : targets_) min_seq = std::min(min_seq, std::max(t->next_seq, head_seq_));
  while (head_seq_ < min_seq) {
    queue_.pop_front();
    ++head_seq_;
  }
}

void AlertmanagerClient::Fire(PageAlert alert) {
  if (!enabled()) return;
  const absl::Time now = absl::Now();
  LabelSet labels = FinalLabels(alert.alertname, alert.labels);
  absl::Time starts_at = alert.starts_at == absl::UnixEpoch() ? now : alert.starts_at;
  absl::MutexLock lock(&mu_);
  if (alert.ends_at) {  // a resolve that carries its own endsAt and annotations
    auto it = active_.find(labels);
    if (it != active_.end()) {
      starts_at = it->second.starts_at;
      if (alert.annotations.empty()) alert.annotations = std::move(it->second.annotations);
      if (alert.generator_url.empty()) alert.generator_url = std::move(it->second.generator_url);
      active_.erase(it);
    }
    Enqueue(Event{std::move(labels), std::move(alert.annotations),
                  std::move(alert.generator_url), std::min(starts_at, *alert.ends_at),
                  alert.ends_at});
    return;
  }
  auto [it, inserted] =
      active_.try_emplace(labels, Active{alert.annotations, alert.generator_url, starts_at});
  if (!inserted) {
    if (it->second.annotations == alert.annotations &&
        it->second.generator_url == alert.generator_url) {
      return;  // the resend keeps it alive
    }
    it->second.annotations = alert.annotations;
    it->second.generator_url = alert.generator_url;
  }
  Enqueue(Event{std::move(labels), std::move(alert.annotations), std::move(alert.generator_url),
                it->second.starts_at, std::nullopt});
}

void AlertmanagerClient::Resolve(const std::string& alertname,
                                 const std::map<std::string, std::string>& labels) {
  if (!enabled()) return;
  const absl::Time now = absl::Now();
  LabelSet final_labels = FinalLabels(alertname, labels);
  absl::MutexLock lock(&mu_);
  Event event{final_labels, {}, {}, now, now};
  // Resolved even if unknown here (e.g. fired before a restart): Alertmanager ends it.
  if (auto it = active_.find(final_labels); it != active_.end()) {
    event.annotations = std::move(it->second.annotations);
    event.generator_url = std::move(it->second.generator_url);
    event.starts_at = it->second.starts_at;
    active_.erase(it);
  }
  Enqueue(std::move(event));
}

void AlertmanagerClient::Run(Target* t) {
  mu_.Lock();
  t->next_resend = absl::Now() + options_.resend_interval;
  while (!stop_) {
    const absl::Time now = absl::Now();
    const bool backing_off = now < t->retry_at;
    if (!backing_off) {
      // Take what is queued, up to queue_capacity distinct alerts; the rest waits its turn.
      uint64_t seq = std::max(t->next_seq, head_seq_);
      const uint64_t end = head_seq_ + queue_.size();
      for (; seq < end; ++seq) {
        const Event& e = queue_[seq - head_seq_];
        auto it = t->batch.find(e.labels);
        if (it != t->batch.end()) {
          it->second = e;
        } else if (t->batch.size() < options_.queue_capacity) {
          t->batch.emplace(e.labels, e);
        } else {
          break;
        }
      }
      t->next_seq = seq;
      TrimQueue();
      if (now >= t->next_resend) {
        if (!active_.empty()) t->resend = true;
        t->next_resend = now + options_.resend_interval;
      }
    }
    const bool work = !backing_off && (!t->batch.empty() || (t->resend && !active_.empty()));
    if (!work) {
      t->cv.WaitWithDeadline(&mu_, backing_off ? t->retry_at : t->next_resend);
      continue;
    }

    // The body: the batch, and on a resend every active alert as it is now (newer than any
    // batched event for it: active_ already reflects calls still queued).
    nlohmann::json alerts = nlohmann::json::array();
    const bool resend = t->resend;
    for (const auto& [labels, e] : t->batch) {
      if (resend && active_.count(labels)) continue;
      alerts.push_back(
          AlertJson(e.labels, e.annotations, e.generator_url, e.starts_at, e.ends_at));
    }
    if (resend) {
      for (const auto& [labels, a] : active_) {
        alerts.push_back(
            AlertJson(labels, a.annotations, a.generator_url, a.starts_at, std::nullopt));
      }
    }
    mu_.Unlock();

    // Labels and annotations are bytes from cgroup and process names: invalid UTF-8 is sent
    // as U+FFFD rather than failing the batch.
    const PostOutcome outcome = t->poster->Post(JsonText(alerts));
    const absl::Time done = absl::Now();

    mu_.Lock();
    if (outcome.ok) {
      ++t->success;
      t->last_success = done;
      t->batch.clear();
      t->resend = false;
      t->retry_at = absl::InfinitePast();
      const int recovered_after = t->consecutive_failures;
      t->consecutive_failures = 0;
      if (recovered_after > 0) {
        mu_.Unlock();  // never write logs under the lock Fire and Resolve take
        Log::Info("alertmanager reachable again",
                  {{"url", t->url.display}, {"failed_attempts", recovered_after}});
        t->suppressed_warnings = 0;
        t->last_warn = absl::InfinitePast();
        mu_.Lock();
      }
      continue;
    }
    ++t->failure;
    ++t->consecutive_failures;
    absl::Duration delay = options_.initial_backoff;
    for (int i = 1; i < t->consecutive_failures && delay < options_.max_backoff; ++i) delay *= 2;
    delay = std::min(delay, options_.max_backoff);
    // Jitter in [delay/2, delay], so an HA pair's senders and many agents spread out.
    delay = delay / 2 + delay * (std::uniform_real_distribution<double>(0, 0.5)(t->rng));
    if (outcome.retryable) {
      t->retry_at = done + delay;
      t->resend = true;  // once it answers again, bring it every active alert
    } else {
      dropped_ += t->batch.size();
      t->batch.clear();
      t->resend = false;
      t->retry_at = absl::InfinitePast();
    }
    const int failures = t->consecutive_failures;
    const bool stopping = stop_;
    mu_.Unlock();
    if (!stopping && done - t->last_warn >= kWarnEvery) {
      Log::Warn(outcome.retryable ? "alertmanager request failed, will retry"
                                  : "alertmanager rejected alerts, dropped",
                {{"url", t->url.display},
                 {"err", outcome.error},
                 {"alerts", static_cast<uint64_t>(alerts.size())},
                 {"consecutive_failures", failures},
                 {"suppressed_warnings", t->suppressed_warnings},
                 {"retry_in", outcome.retryable ? absl::FormatDuration(delay) : "never"}});
      t->last_warn = done;
      t->suppressed_warnings = 0;
    } else {
      ++t->suppressed_warnings;
    }
    mu_.Lock();
  }
  mu_.Unlock();
}

AlertmanagerStats AlertmanagerClient::stats() const {
  AlertmanagerStats out;
  absl::MutexLock lock(&mu_);
  for (const auto& t : targets_) {
    out.targets.push_back({t->url.display, t->success, t->failure, t->last_success});
  }
  out.alerts_dropped = dropped_;
  out.queue_length = queue_.size();
  return out;
}

absl::Status AlertmanagerCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const AlertmanagerStats stats = client_->stats();
  auto requests = CounterFamily("stagewatch_alertmanager_requests_total",
                                "Alert batches posted to each Alertmanager, by result.");
  auto last = GaugeFamily(
      "stagewatch_alertmanager_last_success_timestamp_seconds",
      "Unix time of the last alert batch an Alertmanager accepted (0: none yet).");
  for (const auto& t : stats.targets) {
    AddCounter(&requests, {{"alertmanager", t.url}, {"result", "success"}},
               static_cast<double>(t.requests_success));
    AddCounter(&requests, {{"alertmanager", t.url}, {"result", "failure"}},
               static_cast<double>(t.requests_failure));
    AddGauge(&last, {{"alertmanager", t.url}},
             t.last_success ? absl::ToDoubleSeconds(*t.last_success - absl::UnixEpoch()) : 0);
  }
  auto dropped = CounterFamily(
      "stagewatch_alertmanager_alerts_dropped_total",
      "Alert updates never sent: the oldest dropped when the queue was full, or rejected by "
      "Alertmanager as invalid.");
  AddCounter(&dropped, {}, static_cast<double>(stats.alerts_dropped));
  auto queue = GaugeFamily("stagewatch_alertmanager_queue_length",
                           "Alert updates queued and not yet taken by every Alertmanager's sender.");
  AddGauge(&queue, {}, static_cast<double>(stats.queue_length));
  out->push_back(std::move(requests));
  out->push_back(std::move(dropped));
  out->push_back(std::move(queue));
  out->push_back(std::move(last));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters
