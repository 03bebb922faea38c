// The Alertmanager client's TLS options against a real TLS server (httplib over OpenSSL, a
// different TLS implementation than the client's GnuTLS), with certificates made at test time.
#include <openssl/ssl.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "exporters/alerting/alertmanager_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "log.h"
#include "test_support.h"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;

// A CA, a server certificate for 127.0.0.1 it signed, and a client certificate it signed.
class Certificates {
 public:
  Certificates() {
    char tmpl[] = "/tmp/stagewatch-am-tls-XXXXXX";
    dir_ = mkdtemp(tmpl);
    const std::string key = "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    const std::string sign =
        "openssl x509 -req -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 ";
    const std::string cmd = absl::StrCat(
        "cd ", dir_, " && ", key, "-x509 -days 1 -subj /CN=test-ca -keyout ca-key.pem -out ca.pem",
        " && ", key, "-subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr",
        " && printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && ", sign,
        "-in server.csr -extfile server.ext -out server.pem",
        " && ", key, "-subj /CN=stagewatch -keyout client-key.pem -out client.csr",
        " && ", sign, "-in client.csr -out client.pem >/dev/null 2>&1");
    EXPECT_EQ(system(cmd.c_str()), 0) << cmd;
  }
  ~Certificates() { std::filesystem::remove_all(dir_); }
  std::string operator()(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// POST /api/v2/alerts over TLS; counts what arrives.
class TlsAlertmanager {
 public:
  // With `client_ca`, a client certificate signed by it is required. `tls12_only` caps the
  // server at TLS 1.2.
  TlsAlertmanager(const Certificates& certs, bool require_client_cert, bool tls12_only = false)
      : server_(certs("server.pem").c_str(), certs("server-key.pem").c_str(),
                require_client_cert ? certs("ca.pem").c_str() : nullptr) {
    if (tls12_only) SSL_CTX_set_max_proto_version(server_.ssl_context(), TLS1_2_VERSION);
    server_.Post("/api/v2/alerts", [this](const httplib::Request&, httplib::Response& res) {
      ++received_;
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TlsAlertmanager() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return absl::StrCat("https://127.0.0.1:", port_); }
  int received() const { return received_.load(); }

 private:
  httplib::SSLServer server_;
  int port_ = -1;
  std::thread thread_;
  std::atomic<int> received_{0};
};

struct Outcome {
  bool delivered = false;
  std::string log;  // the client's warnings
};

// Fires one alert with `tls` and waits for a success or a first failure.
Outcome Send(const TlsAlertmanager& am, const AlertmanagerTlsOptions& tls) {
  std::ostringstream log;
  Log::SetSink(&log);
  Outcome out;
  {
    AlertmanagerOptions o;
    o.urls = {am.url()};
    o.tls = tls;
    o.timeout = absl::Seconds(3);
    o.initial_backoff = o.max_backoff = absl::Seconds(10);  // one attempt is enough here
    AlertmanagerClient client(o);
    client.Fire(PageAlert{.alertname = "StagewatchOOMKill", .labels = {{"pipeline_stage", "t"}}});
    testing::WaitUntil(
        [&] {
          const AlertmanagerStats s = client.stats();
          return s.targets.at(0).requests_success + s.targets.at(0).requests_failure > 0;
        },
        5000);
    out.delivered = client.stats().targets.at(0).requests_success == 1;
  }
  Log::SetSink(nullptr);
  out.log = log.str();
  return out;
}

TEST(AlertmanagerTlsTest, VerifiesTheServerWithTheCaFileOrNotAtAll) {
  Certificates certs;
  TlsAlertmanager am(certs, /*require_client_cert=*/false);
  const Outcome unknown_ca = Send(am, {});  // the system's CAs do not know the test CA
  EXPECT_FALSE(unknown_ca.delivered);
  EXPECT_THAT(unknown_ca.log, HasSubstr("the server's TLS certificate did not verify"));
  EXPECT_THAT(unknown_ca.log, HasSubstr("alerting.tls.ca_file"));

  EXPECT_TRUE(Send(am, {.ca_file = certs("ca.pem")}).delivered);
  EXPECT_TRUE(Send(am, {.insecure_skip_verify = true}).delivered);
  EXPECT_EQ(am.received(), 2);
}

TEST(AlertmanagerTlsTest, SendsTheClientCertificate) {
  Certificates certs;
  TlsAlertmanager am(certs, /*require_client_cert=*/true);
  const Outcome without = Send(am, {.ca_file = certs("ca.pem")});
  EXPECT_FALSE(without.delivered);
  EXPECT_THAT(without.log, HasSubstr("alertmanager request failed")) << without.log;

  const Outcome with = Send(am, {.ca_file = certs("ca.pem"), .cert_file = certs("client.pem"),
                                 .key_file = certs("client-key.pem")});
  EXPECT_TRUE(with.delivered) << with.log;
  EXPECT_EQ(am.received(), 1);
}

TEST(AlertmanagerTlsTest, MinVersionTls13RefusesATls12Server) {
  Certificates certs;
  TlsAlertmanager am(certs, /*require_client_cert=*/false, /*tls12_only=*/true);
  EXPECT_TRUE(Send(am, {.ca_file = certs("ca.pem")}).delivered);  // TLS12, the default
  const Outcome tls13 = Send(am, {.ca_file = certs("ca.pem"), .min_version = "TLS13"});
  EXPECT_FALSE(tls13.delivered);
  EXPECT_THAT(tls13.log, HasSubstr("TLS handshake failed")) << tls13.log;
  EXPECT_EQ(am.received(), 1);
}

}  // namespace
}  // namespace stagewatch::exporters
