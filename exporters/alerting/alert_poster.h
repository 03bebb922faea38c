// One Alertmanager's POST /api/v2/alerts, sent with libcurl (its GnuTLS build, the TLS stack
// the HTTP server uses too): the TLS options, basic auth or bearer token, the connect, read and
// write timeouts, and an abort that another thread can call.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <string>

#include "absl/time/time.h"
#include "exporters/alerting/alertmanager_client.h"

namespace stagewatch::exporters {

struct PostOutcome {
  bool ok = false;
  bool retryable = true;  // false when Alertmanager refused the alerts themselves
  std::string error;      // what happened, for the log
};

class AlertPoster {
 public:
  AlertPoster(const AlertmanagerUrl& url, const AlertmanagerOptions& options);
  ~AlertPoster();
  AlertPoster(const AlertPoster&) = delete;
  AlertPoster& operator=(const AlertPoster&) = delete;

  // Sends `body` (a JSON array of alerts) and waits for the answer. One caller at a time.
  PostOutcome Post(const std::string& body);
  // Thread-safe: the request in flight, and every later one, ends at once as "canceled".
  void Abort();

 private:
  std::string Describe(CURLcode code) const;

  const absl::Duration timeout_;
  const bool tls_;
  CURL* easy_;
  CURLM* multi_;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
  std::string answer_;  // the start of the response body, for error messages
  std::atomic<bool> aborted_{false};
};

}  // namespace stagewatch::exporters
