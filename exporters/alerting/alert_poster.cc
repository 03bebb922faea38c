#include "exporters/alerting/alert_poster.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "version.h"

namespace stagewatch::exporters {
namespace {

constexpr size_t kMaxErrorBody = 200;

// curl_global_init is not safe to race with other curl calls; every poster passes here first.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t KeepStart(char* data, size_t size, size_t count, void* user) {
  auto* answer = static_cast<std::string*>(user);
  const size_t bytes = size * count;
  if (answer->size() < kMaxErrorBody) {
    answer->append(data, std::min(bytes, kMaxErrorBody - answer->size()));
  }
  return bytes;
}

}  // namespace

AlertPoster::AlertPoster(const AlertmanagerUrl& url, const AlertmanagerOptions& options)
    : timeout_(options.timeout), tls_(url.scheme == "https") {
  InitCurlOnce();
  easy_ = curl_easy_init();
  multi_ = curl_multi_init();
  headers_ = curl_slist_append(headers_, "Content-Type: application/json");
  // No "Expect: 100-continue" round trip for bodies above 1 KiB.
  headers_ = curl_slist_append(headers_, "Expect:");
  if (!options.bearer_token.empty()) {
    const std::string bearer = absl::StrCat("Authorization: Bearer ", options.bearer_token);
    headers_ = curl_slist_append(headers_, bearer.c_str());
  }
  const std::string user_agent = absl::StrCat("stagewatch/", kVersion);
  curl_easy_setopt(easy_, CURLOPT_URL, url.endpoint.c_str());
  curl_easy_setopt(easy_, CURLOPT_PROTOCOLS_STR, "http,https");
  // Pages go straight to the configured Alertmanager: no http_proxy from the environment.
  curl_easy_setopt(easy_, CURLOPT_PROXY, "");
  curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  // A new connection per batch: an Alertmanager restarted between batches is never met on a
  // connection it has closed.
  curl_easy_setopt(easy_, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(easy_, CURLOPT_FRESH_CONNECT, 1L);
  curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout_))));
  curl_easy_setopt(easy_, CURLOPT_USERAGENT, user_agent.c_str());  // curl copies strings
  curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers_);
  curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, KeepStart);
  curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &answer_);
  if (!options.basic_auth_user.empty()) {
    curl_easy_setopt(easy_, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(easy_, CURLOPT_USERNAME, options.basic_auth_user.c_str());
    curl_easy_setopt(easy_, CURLOPT_PASSWORD, options.basic_auth_password.c_str());
  }
  if (tls_) {
    const AlertmanagerTlsOptions& tls = options.tls;
    if (!tls.ca_file.empty()) {
      // The CA file instead of the system's CAs, not besides them (curl would keep its
      // default directory, /etc/ssl/certs, too).
      curl_easy_setopt(easy_, CURLOPT_CAINFO, tls.ca_file.c_str());
      curl_easy_setopt(easy_, CURLOPT_CAPATH, nullptr);
    }
    if (!tls.cert_file.empty()) {
      curl_easy_setopt(easy_, CURLOPT_SSLCERT, tls.cert_file.c_str());
      curl_easy_setopt(easy_, CURLOPT_SSLKEY, tls.key_file.c_str());
    }
    if (tls.insecure_skip_verify) {
      curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(easy_, CURLOPT_SSLVERSION,
                     tls.min_version == "TLS13" ? CURL_SSLVERSION_TLSv1_3
                                                : CURL_SSLVERSION_TLSv1_2);
  }
}

AlertPoster::~AlertPoster() {
  curl_multi_cleanup(multi_);
  curl_easy_cleanup(easy_);
  curl_slist_free_all(headers_);
}

void AlertPoster::Abort() {
  aborted_.store(true);
  curl_multi_wakeup(multi_);  // documented as callable from any thread
}

PostOutcome AlertPoster::Post(const std::string& body) {
  PostOutcome outcome;
  if (aborted_.load()) {
    outcome.error = "canceled";
    return outcome;
  }
  answer_.clear();
  error_[0] = '\0';
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, body.data());
  curl_multi_add_handle(multi_, easy_);

  // curl times the connect (TCP and TLS handshake); the read and write timeouts are idle ones,
  // as documented: once connected, `timeout_` without a byte moving either way ends the request.
  const int poll_ms =
      static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout_) / 10, 5, 100));
  const CURLINFO connected_at = tls_ ? CURLINFO_APPCONNECT_TIME_T : CURLINFO_CONNECT_TIME_T;
  curl_off_t last_bytes = -1;
  absl::Time last_progress = absl::InfiniteFuture();
  std::optional<CURLcode> result;
  std::string stalled;
  while (true) {
    int running = 0;
    curl_multi_perform(multi_, &running);
    if (running == 0) {
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg == CURLMSG_DONE) result = msg->data.result;
      }
      break;
    }
    if (aborted_.load()) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_off_t connect_us = 0, up = 0, down = 0;
    long header_bytes = 0;
    curl_easy_getinfo(easy_, connected_at, &connect_us);
    curl_easy_getinfo(easy_, CURLINFO_SIZE_UPLOAD_T, &up);
    curl_easy_getinfo(easy_, CURLINFO_SIZE_DOWNLOAD_T, &down);
    curl_easy_getinfo(easy_, CURLINFO_HEADER_SIZE, &header_bytes);
    const absl::Time now = absl::Now();
    if (connect_us > 0) {
      const curl_off_t bytes = up + down + header_bytes;
      if (bytes != last_bytes) {
        last_bytes = bytes;
        last_progress = now;
      } else if (now - last_progress >= timeout_) {
        const std::string after = absl::FormatDuration(timeout_);
        stalled = up < static_cast<curl_off_t>(body.size())
                      ? absl::StrCat("sending failed or timed out after ", after)
                      : absl::StrCat("no answer: read failed or timed out after ", after);
        break;
      }
    }
    curl_multi_poll(multi_, nullptr, 0, poll_ms, nullptr);
  }
  curl_multi_remove_handle(multi_, easy_);

  if (!stalled.empty()) {
    outcome.error = stalled;
  } else if (!result || *result != CURLE_OK) {
    outcome.error = Describe(result.value_or(CURLE_GOT_NOTHING));
  } else {
    long status = 0;
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      outcome.ok = true;
    } else {
      std::string detail = answer_;
      while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
      outcome.error = absl::StrCat("HTTP ", status, detail.empty() ? "" : ": ", detail);
      // Alertmanager answers 400 for alerts it will never accept: retrying cannot help.
      outcome.retryable = status != 400 && status != 422;
    }
  }
  return outcome;
}

std::string AlertPoster::Describe(CURLcode code) const {
  const std::string detail = error_[0] != '\0' ? error_ : curl_easy_strerror(code);
  const std::string after = absl::FormatDuration(timeout_);
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return absl::StrCat("cannot connect (refused, unreachable or not resolvable): ", detail);
    case CURLE_OPERATION_TIMEDOUT:
      return absl::StrCat("connect timed out after ", after);
    case CURLE_SEND_ERROR:
      return absl::StrCat("sending failed: ", detail);
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      return absl::StrCat("no answer: read failed: ", detail);
    case CURLE_SSL_CONNECT_ERROR:
      return absl::StrCat("TLS handshake failed: ", detail);
    case CURLE_PEER_FAILED_VERIFICATION:
      return absl::StrCat("the server's TLS certificate did not verify (", detail,
                          "); give its CA in alerting.tls.ca_file");
    case CURLE_SSL_CACERT_BADFILE:
      return absl::StrCat("cannot load the CA certificates: ", detail);
    case CURLE_SSL_CERTPROBLEM:
      return absl::StrCat("cannot use the client certificate or key: ", detail);
    case CURLE_ABORTED_BY_CALLBACK:
      return "canceled";
    default:
      return absl::StrCat("request failed: ", detail);
  }
}

}  // namespace stagewatch::exporters
