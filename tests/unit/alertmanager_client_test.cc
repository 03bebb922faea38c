// The Alertmanager client against a fake Alertmanager: a real httplib server on a loopback
// ephemeral port that records what it receives and can fail, sleep or hold requests.
#include "exporters/alerting/alertmanager_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exporters/metrics/metric_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "log.h"
#include "nlohmann/json.hpp"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---- what the client sends, as a test reads it -------------------------------------------

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  bool has(const std::string& key) const { return object.count(key) > 0; }
  const Json& operator[](const std::string& key) const { return object.at(key); }
  std::map<std::string, std::string> StringMap() const {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : object) out[k] = v.string;
    return out;
  }
};

// nlohmann's parse, strict (it refuses invalid UTF-8 too), into the Json above.
std::optional<Json> ReadJson(const std::string& text) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  const std::function<Json(const nlohmann::json&)> convert = [&](const nlohmann::json& j) {
    Json v;
    if (j.is_boolean()) {
      v.kind = Json::Kind::kBool;
      v.boolean = j.get<bool>();
    } else if (j.is_number()) {
      v.kind = Json::Kind::kNumber;
      v.number = j.get<double>();
    } else if (j.is_string()) {
      v.kind = Json::Kind::kString;
      v.string = j.get<std::string>();
    } else if (j.is_array()) {
      v.kind = Json::Kind::kArray;
      for (const nlohmann::json& element : j) v.array.push_back(convert(element));
    } else if (j.is_object()) {
      v.kind = Json::Kind::kObject;
      for (const auto& [key, member] : j.items()) v.object.emplace(key, convert(member));
    }
    return v;
  };
  return convert(parsed);
}

Json ParseJson(const std::string& text) {
  std::optional<Json> v = ReadJson(text);
  EXPECT_TRUE(v.has_value()) << "not valid JSON: " << text;
  return v.value_or(Json{});
}

// ---- a fake Alertmanager -----------------------------------------------------------------

class FakeAlertmanager {
 public:
  struct Request {
    std::string path, content_type, authorization, user_agent, body;
    int status = 0;
    std::chrono::steady_clock::time_point arrived;
    Json alerts;  // the parsed body
  };

  explicit FakeAlertmanager(std::string prefix = "") {
    server_.Post(prefix + "/api/v2/alerts",
                 [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");  // listening from here on
    EXPECT_GT(port_, 0);
    url_ = absl::StrCat("http://127.0.0.1:", port_, prefix);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeAlertmanager() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  const std::string& url() const { return url_; }

  void FailNext(int n, int status = 503) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
    fail_status_ = status;
  }
  // Handlers wait this long (or until Release) before answering.
  void Sleep(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    sleep_ = d;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sleep_ = std::chrono::milliseconds(0);
      ++generation_;
    }
    cv_.notify_all();
  }

  // Requests answered so far, in order.
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return answered_;
  }
  bool WaitForAnswered(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return answered_.size() >= n; });
  }
  bool WaitForArrived(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return arrived_ >= n; });
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    Request r;
    r.arrived = std::chrono::steady_clock::now();
    r.path = req.path;
    r.content_type = req.get_header_value("Content-Type");
    r.authorization = req.get_header_value("Authorization");
    r.user_agent = req.get_header_value("User-Agent");
    r.body = req.body;
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    const uint64_t generation = generation_;
    cv_.wait_for(lock, sleep_, [&] { return closing_ || generation_ != generation; });
    if (fail_next_ > 0) {
      --fail_next_;
      r.status = fail_status_;
      res.status = fail_status_;
      res.set_content("{\"message\":\"told to fail\"}\n", "application/json");
    } else {
      r.status = 200;
      res.status = 200;
    }
    r.alerts = ReadJson(r.body).value_or(Json{});
    answered_.push_back(std::move(r));
    cv_.notify_all();
  }

  httplib::Server server_;
  int port_ = -1;
  std::string url_;
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool closing_ = false;
  int fail_next_ = 0;
  int fail_status_ = 503;
  std::chrono::milliseconds sleep_{0};
  uint64_t generation_ = 0;
  size_t arrived_ = 0;
  std::vector<Request> answered_;
};

// A loopback port with nothing listening (connections are refused).
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

AlertmanagerOptions TestOptions(std::vector<std::string> urls) {
  AlertmanagerOptions o;
  o.urls = std::move(urls);
  o.timeout = absl::Seconds(2);
  o.resend_interval = absl::Hours(1);  // tests of resending shorten it
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(80);
  o.labels = {{"instance", "node-1:9436"}};
  return o;
}

PageAlert OomAlert(std::string stage = "train") {
  PageAlert a;
  a.alertname = "StagewatchOOMKill";
  a.labels = {{"pipeline_stage", std::move(stage)}, {"severity", "page"}};
  a.annotations = {{"summary", "OOM kill in \"train\""}, {"description", "line 1\nline 2"}};
  return a;
}

// The alerts of a request with this alertname and pipeline_stage.
std::vector<Json> Find(const FakeAlertmanager::Request& r, const std::string& stage) {
  std::vector<Json> out;
  for (const Json& a : r.alerts.array) {
    if (a.has("labels") && a["labels"].has("pipeline_stage") &&
        a["labels"]["pipeline_stage"].string == stage) {
      out.push_back(a);
    }
  }
  return out;
}

std::string Serialize(const AlertmanagerClient& client) {
  AlertmanagerCollector collector(&client);
  std::vector<prometheus::MetricFamily> families;
  EXPECT_TRUE(collector.Collect(&families).ok());
  return SerializeText(families);
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t Ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

// Polls `done` until it holds or `timeout` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout = milliseconds(2000)) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

// ---- validation --------------------------------------------------------------------------

TEST(AlertmanagerValidateTest, AcceptsBaseUrls) {
  AlertmanagerOptions o;
  o.urls = {"http://127.0.0.1:9093", "https://am.example.com:9443/alertmanager/",
            "HTTP://[::1]:9093", "http://am-2.internal"};
  absl::StatusOr<std::vector<AlertmanagerUrl>> urls = AlertmanagerClient::Validate(o);
  ASSERT_TRUE(urls.ok()) << urls.status();
  ASSERT_EQ(urls->size(), 4u);
  EXPECT_EQ((*urls)[0].display, "http://127.0.0.1:9093");
  EXPECT_EQ((*urls)[0].port, 9093);
  EXPECT_EQ((*urls)[0].prefix, "");
  EXPECT_EQ((*urls)[1].scheme, "https");
  EXPECT_EQ((*urls)[1].host, "am.example.com");
  EXPECT_EQ((*urls)[1].prefix, "/alertmanager");
  EXPECT_EQ((*urls)[1].display, "https://am.example.com:9443/alertmanager");
  EXPECT_EQ((*urls)[2].host, "::1");
  EXPECT_EQ((*urls)[2].display, "http://[::1]:9093");
  EXPECT_EQ((*urls)[3].port, 80);

  AlertmanagerOptions none;  // no URL: the client is disabled, which is valid
  EXPECT_TRUE(AlertmanagerClient::Validate(none).ok());
}

TEST(AlertmanagerValidateTest, RejectsBadUrlsClearly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"127.0.0.1:9093", "no scheme; write http://127.0.0.1:9093"},
      {"ftp://am:9093", "scheme \"ftp\" is not supported; use http:// or https://"},
      {"unix:///run/am.sock", "scheme \"unix\" is not supported"},
      {"http://", "no host"},
      {"http://:9093", "no host"},
      {"http://am:port", "port \"port\" is not a number from 1 to 65535"},
      {"http://am:70000", "port \"70000\""},
      {"http://am:0", "port \"0\""},
      {"http://am:", "port \"\""},
      {"http://admin:secret@am:9093", "credentials in the URL are not supported"},
      {"http://am:9093/api/v2/alerts", "/api/v2/alerts is appended"},
      {"http://am:9093/?x=1", "a query or fragment is not allowed"},
      {"http://am:9093#top", "a query or fragment is not allowed"},
      {"http://::1:9093", "an IPv6 address must be in brackets"},
      {"http://[::1:9093", "unterminated IPv6 address"},
      {"http://[zz::1]:9093", "is not an IPv6 address"},
      {"http://am 1:9093", "spaces, control and non-ASCII characters"},
      {"http://am!:9093", "host \"am!\" is not a valid host name"},
      {"http://", "no host"},
      {"https://[::1", "unterminated IPv6 address"},
  };
  for (const auto& [url, message] : cases) {
    AlertmanagerOptions o;
    o.urls = {url};
    absl::StatusOr<std::vector<AlertmanagerUrl>> got = AlertmanagerClient::Validate(o);
    ASSERT_FALSE(got.ok()) << url;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(message)) << url;
    if (url.find('@') != std::string::npos) {
      // The password never reaches a message (or a log).
      EXPECT_THAT(std::string(got.status().message()), Not(HasSubstr("secret"))) << url;
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("\"http://***@am:9093\""));
    } else if (!url.empty()) {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("\"" + url + "\"")) << url;
    }
  }
}

TEST(AlertmanagerValidateTest, RejectsBadSettings) {
  auto message = [](AlertmanagerOptions o) {
    absl::StatusOr<std::vector<AlertmanagerUrl>> got = AlertmanagerClient::Validate(o);
    return got.ok() ? std::string("ok") : std::string(got.status().message());
  };
  AlertmanagerOptions base;
  base.urls = {"http://127.0.0.1:9093"};
  EXPECT_EQ(message(base), "ok");

  AlertmanagerOptions o = base;
  o.urls = {"http://127.0.0.1:9093", "http://127.0.0.1:9093/"};
  EXPECT_THAT(message(o), HasSubstr("listed twice"));
  o = base;
  o.basic_auth_user = "u";
  o.basic_auth_password = "p";
  o.bearer_token = "t";
  EXPECT_THAT(message(o), HasSubstr("not both"));
  o = base;
  o.basic_auth_password = "p";
  EXPECT_THAT(message(o), HasSubstr("password is set without a user"));
  o = base;
  o.timeout = absl::ZeroDuration();
  EXPECT_THAT(message(o), HasSubstr("timeout must be positive"));
  o = base;
  o.resend_interval = absl::Seconds(-1);
  EXPECT_THAT(message(o), HasSubstr("resend interval must be positive"));
  o = base;
  o.max_backoff = absl::Milliseconds(100);
  EXPECT_THAT(message(o), HasSubstr("max backoff (100ms) is below the initial backoff (200ms)"));
  o = base;
  o.queue_capacity = 0;
  EXPECT_THAT(message(o), HasSubstr("queue capacity"));
}

// ---- sending -----------------------------------------------------------------------------

const std::regex kRfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

TEST(AlertmanagerClientTest, FiredAlertArrivesPromptlyAsAlertmanagerJson) {
  FakeAlertmanager am("/am");
  AlertmanagerClient client(TestOptions({am.url()}));
  ASSERT_TRUE(client.enabled());
  PageAlert alert = OomAlert();
  alert.labels["pipeline"] = "nightly";
  alert.labels["empty"] = "";      // an empty label is an absent one
  alert.labels["bad-name"] = "x";  // would make Alertmanager reject the batch
  alert.starts_at = absl::FromUnixMillis(1714564800123);

  const auto fired = Clock::now();
  client.Fire(alert);
  ASSERT_TRUE(am.WaitForAnswered(1));
  const FakeAlertmanager::Request r = am.requests().at(0);
  EXPECT_LT(Ms(r.arrived - fired), 500);
  EXPECT_EQ(r.path, "/am/api/v2/alerts");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_THAT(r.user_agent, HasSubstr("stagewatch/"));
  EXPECT_EQ(r.authorization, "");

  const Json body = ParseJson(r.body);
  ASSERT_EQ(body.kind, Json::Kind::kArray);
  ASSERT_EQ(body.array.size(), 1u);
  const Json& a = body.array[0];
  EXPECT_EQ(a["labels"].StringMap(), (std::map<std::string, std::string>{
                                         {"alertname", "StagewatchOOMKill"},
                                         {"instance", "node-1:9436"},
                                         {"pipeline", "nightly"},
                                         {"pipeline_stage", "train"},
                                         {"severity", "page"}}));
  EXPECT_EQ(a["annotations"].StringMap(), alert.annotations);
  EXPECT_EQ(a["startsAt"].string, "2024-05-01T12:00:00.123Z");
  EXPECT_FALSE(a.has("endsAt"));
  ASSERT_TRUE(a.has("generatorURL"));
  EXPECT_EQ(a["generatorURL"].string, "");
}

// alerting.labels are on every page, as Prometheus' external_labels, but a page's own label of
// the same name wins; the generatorURL is sent as given, on the resolve too.
TEST(AlertmanagerClientTest, SiteLabelsAndGeneratorUrlArrive) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.labels = {{"instance", "node-7"}, {"cluster", "eu-1"}, {"severity", "site"}};
  AlertmanagerClient client(o);
  PageAlert alert = OomAlert();
  alert.generator_url = "http://node-7:9617/runs?stage=train";
  client.Fire(alert);
  ASSERT_TRUE(am.WaitForAnswered(1));
  client.Resolve(alert.alertname, alert.labels);
  ASSERT_TRUE(am.WaitForAnswered(2));
  for (int i = 0; i < 2; i++) {
    const Json body = ParseJson(am.requests().at(i).body);
    ASSERT_EQ(body.array.size(), 1u);
    const Json& a = body.array[0];
    EXPECT_EQ(a["labels"].StringMap(), (std::map<std::string, std::string>{
                                           {"alertname", "StagewatchOOMKill"},
                                           {"cluster", "eu-1"},
                                           {"instance", "node-7"},
                                           {"pipeline_stage", "train"},
                                           {"severity", "page"}}));
    EXPECT_EQ(a["generatorURL"].string, "http://node-7:9617/runs?stage=train");
  }
}

// Labels and annotations carry cgroup and process names, which are any bytes: the body is
// valid JSON whatever they hold, every valid character arrives as it was, and bytes that are
// not UTF-8 arrive as U+FFFD.
TEST(AlertmanagerClientTest, AnyBytesArriveAsValidJson) {
  FakeAlertmanager am;
  AlertmanagerClient client(TestOptions({am.url()}));
  PageAlert alert = OomAlert("st\x80" "age");
  const std::string tricky = "q\"uo\\te\n\r\t\b\f\x01\x1f\x7f \u00fcn\u00ef \u540d \U0001F680 </script>";
  alert.annotations["summary"] = tricky;
  alert.annotations["description"] = std::string("nul\0x|\xe2\x82|\xc0\xaf|\xed\xa0\x80|", 16);
  client.Fire(alert);
  ASSERT_TRUE(am.WaitForAnswered(1));
  const Json body = ParseJson(am.requests().at(0).body);
  ASSERT_EQ(body.array.size(), 1u);
  const Json& a = body.array[0];
  EXPECT_EQ(a["annotations"]["summary"].string, tricky);
  EXPECT_EQ(a["labels"]["pipeline_stage"].string, "st\xef\xbf\xbd" "age");
  const std::string description = a["annotations"]["description"].string;
  EXPECT_EQ(description.substr(0, 6), std::string("nul\0x|", 6));
  EXPECT_THAT(description, HasSubstr("|\xef\xbf\xbd"));
  EXPECT_THAT(description, Not(HasSubstr("\xc0"))) << "no byte that is not UTF-8 is sent";
}

TEST(AlertmanagerClientTest, UnsetStartsAtMeansNow) {
  FakeAlertmanager am;
  AlertmanagerClient client(TestOptions({am.url()}));
  const absl::Time before = absl::Now() - absl::Milliseconds(1);
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  const std::string starts = am.requests().at(0).alerts.array.at(0)["startsAt"].string;
  EXPECT_TRUE(std::regex_match(starts, kRfc3339)) << starts;
  absl::Time t;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, starts, &t, &err)) << err;
  EXPECT_GE(t, before);
  EXPECT_LE(t, absl::Now());
}

TEST(AlertmanagerClientTest, ResolveSendsEndsAtOnceThenForgets) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.resend_interval = absl::Milliseconds(100);
  AlertmanagerClient client(o);
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  const std::string starts = am.requests().at(0).alerts.array.at(0)["startsAt"].string;

  client.Resolve("StagewatchOOMKill", {{"pipeline_stage", "train"}, {"severity", "page"}});
  // The resolve, then (at least) two resend periods in which nothing is active.
  std::this_thread::sleep_for(milliseconds(300));
  const std::vector<FakeAlertmanager::Request> rs = am.requests();
  size_t resolves = 0;
  bool after_resolve = false;
  for (size_t i = 1; i < rs.size(); ++i) {
    for (const Json& a : Find(rs[i], "train")) {
      EXPECT_FALSE(after_resolve) << "re-sent after its resolve: " << rs[i].body;
      if (!a.has("endsAt")) continue;  // a resend racing the resolve
      ++resolves;
      after_resolve = true;
      EXPECT_TRUE(std::regex_match(a["endsAt"].string, kRfc3339)) << a["endsAt"].string;
      EXPECT_EQ(a["startsAt"].string, starts);  // the original startsAt
      EXPECT_GE(a["endsAt"].string, starts);
      EXPECT_EQ(a["annotations"]["summary"].string, "OOM kill in \"train\"");
    }
  }
  EXPECT_EQ(resolves, 1u);
}

TEST(AlertmanagerClientTest, ResolveOfUnknownAlertStillEndsIt) {
  FakeAlertmanager am;
  AlertmanagerClient client(TestOptions({am.url()}));
  client.Resolve("StagewatchOOMKill", {{"pipeline_stage", "train"}});
  ASSERT_TRUE(am.WaitForAnswered(1));
  const Json a = am.requests().at(0).alerts.array.at(0);
  EXPECT_EQ(a["labels"]["alertname"].string, "StagewatchOOMKill");
  ASSERT_TRUE(a.has("endsAt"));
  EXPECT_EQ(a["startsAt"].string, a["endsAt"].string);
}

TEST(AlertmanagerClientTest, ReSendsActiveAlertsAtResendIntervalWithOriginalStartsAt) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.resend_interval = absl::Milliseconds(100);
  AlertmanagerClient client(o);
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(4, milliseconds(2000)));
  const std::vector<FakeAlertmanager::Request> rs = am.requests();
  const std::string starts = rs[0].alerts.array.at(0)["startsAt"].string;
  for (size_t i = 0; i < 4; ++i) {
    std::vector<Json> found = Find(rs[i], "train");
    ASSERT_EQ(found.size(), 1u) << rs[i].body;
    EXPECT_EQ(found[0]["startsAt"].string, starts);
    EXPECT_FALSE(found[0].has("endsAt"));
  }
  // Resends are paced by the interval, not sent back to back.
  EXPECT_GE(Ms(rs[3].arrived - rs[1].arrived), 150);

  // Firing it again unchanged adds nothing; with new annotations, the update goes at once.
  PageAlert changed = OomAlert();
  changed.annotations["summary"] = "two OOM kills";
  const size_t before = am.requests().size();
  const auto fired = Clock::now();
  client.Fire(changed);
  ASSERT_TRUE(am.WaitForAnswered(before + 1));
  const FakeAlertmanager::Request update = am.requests().at(before);
  EXPECT_LT(Ms(update.arrived - fired), 90);
  ASSERT_EQ(Find(update, "train").size(), 1u);
  EXPECT_EQ(Find(update, "train")[0]["annotations"]["summary"].string, "two OOM kills");
  EXPECT_EQ(Find(update, "train")[0]["startsAt"].string, starts);
}

TEST(AlertmanagerClientTest, QueuedAlertsAreBatchedIntoOneRequest) {
  FakeAlertmanager am;
  AlertmanagerClient client(TestOptions({am.url()}));
  am.Sleep(milliseconds(2000));  // hold the first request so the rest queue up
  client.Fire(OomAlert("a"));
  ASSERT_TRUE(am.WaitForArrived(1));
  client.Fire(OomAlert("b"));
  client.Fire(OomAlert("c"));
  client.Resolve("StagewatchOOMKill", {{"pipeline_stage", "b"}, {"severity", "page"}});
  am.Release();
  ASSERT_TRUE(am.WaitForAnswered(2));
  std::this_thread::sleep_for(milliseconds(50));
  const std::vector<FakeAlertmanager::Request> rs = am.requests();
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[1].alerts.array.size(), 2u) << rs[1].body;  // b's fire and resolve coalesced
  ASSERT_EQ(Find(rs[1], "b").size(), 1u);
  EXPECT_TRUE(Find(rs[1], "b")[0].has("endsAt"));
  ASSERT_EQ(Find(rs[1], "c").size(), 1u);
  EXPECT_FALSE(Find(rs[1], "c")[0].has("endsAt"));
}

TEST(AlertmanagerClientTest, HaPairBothReceiveEveryAlert) {
  FakeAlertmanager am1, am2;
  AlertmanagerClient client(TestOptions({am1.url(), am2.url()}));
  client.Fire(OomAlert("a"));
  client.Fire(OomAlert("b"));
  for (FakeAlertmanager* am : {&am1, &am2}) {
    const auto deadline = Clock::now() + milliseconds(2000);
    std::set<std::string> stages;
    while (stages.size() < 2 && Clock::now() < deadline) {
      am->WaitForAnswered(am->requests().size() + 1, milliseconds(100));
      for (const auto& r : am->requests()) {
        for (const Json& a : r.alerts.array) stages.insert(a["labels"]["pipeline_stage"].string);
      }
    }
    EXPECT_EQ(stages, (std::set<std::string>{"a", "b"})) << am->url();
  }
  // The server records a request just before the client reads its answer.
  WaitFor([&] {
    const AlertmanagerStats s = client.stats();
    return s.targets.at(0).requests_success > 0 && s.targets.at(1).requests_success > 0;
  });
  const AlertmanagerStats s = client.stats();
  EXPECT_GE(s.targets.at(0).requests_success, 1u);
  EXPECT_GE(s.targets.at(1).requests_success, 1u);
  EXPECT_EQ(s.targets.at(0).requests_failure, 0u);
  EXPECT_EQ(s.queue_length, 0u);
}

TEST(AlertmanagerClientTest, OneStuckUrlDoesNotDelayTheOther) {
  auto stuck = std::make_unique<FakeAlertmanager>();
  FakeAlertmanager healthy;
  stuck->Sleep(milliseconds(5000));
  AlertmanagerOptions o = TestOptions({stuck->url(), healthy.url()});
  o.timeout = absl::Seconds(3);
  auto client = std::make_unique<AlertmanagerClient>(o);

  auto fired = Clock::now();
  client->Fire(OomAlert("a"));
  ASSERT_TRUE(healthy.WaitForAnswered(1));
  EXPECT_LT(Ms(healthy.requests().at(0).arrived - fired), 500);
  ASSERT_TRUE(stuck->WaitForArrived(1));

  fired = Clock::now();
  client->Fire(OomAlert("b"));  // the stuck URL is still waiting on its first answer
  ASSERT_TRUE(healthy.WaitForAnswered(2));
  EXPECT_LT(Ms(healthy.requests().at(1).arrived - fired), 500);
  EXPECT_EQ(stuck->requests().size(), 0u);
  EXPECT_EQ(client->stats().queue_length, 1u);  // b waits for the stuck URL only

  // Destruction aborts the request in flight instead of waiting for its timeout.
  const auto start = Clock::now();
  client.reset();
  EXPECT_LT(Ms(Clock::now() - start), 1000);
}

TEST(AlertmanagerClientTest, RetriesWithBackoffKeepingTheBatchThenSucceeds) {
  FakeAlertmanager am;
  am.FailNext(3);
  AlertmanagerClient client(TestOptions({am.url()}));  // backoff 20ms doubling to 80ms
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(4));
  ASSERT_TRUE(WaitFor([&] { return client.stats().targets.at(0).requests_success == 1; }));
  const std::vector<FakeAlertmanager::Request> rs = am.requests();
  ASSERT_EQ(rs.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(rs[i].status, i < 3 ? 503 : 200);
    EXPECT_EQ(Find(rs[i], "train").size(), 1u) << "attempt " << i << ": " << rs[i].body;
  }
  // With jitter each wait is in [d/2, d] for d = 20, 40, 80 ms.
  const int64_t g1 = Ms(rs[1].arrived - rs[0].arrived);
  const int64_t g2 = Ms(rs[2].arrived - rs[1].arrived);
  const int64_t g3 = Ms(rs[3].arrived - rs[2].arrived);
  EXPECT_GE(g1, 9);
  EXPECT_GE(g2, 19);
  EXPECT_GE(g3, 39);
  EXPECT_GE(g1 + g2 + g3, 70);

  const AlertmanagerStats s = client.stats();
  EXPECT_EQ(s.targets.at(0).requests_failure, 3u);
  EXPECT_EQ(s.targets.at(0).requests_success, 1u);
  ASSERT_TRUE(s.targets.at(0).last_success.has_value());
  const std::string text = Serialize(client);
  EXPECT_THAT(text, HasSubstr(absl::StrCat("stagewatch_alertmanager_requests_total{alertmanager=\"",
                                           am.url(), "\",result=\"failure\"} 3")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("stagewatch_alertmanager_requests_total{alertmanager=\"",
                                           am.url(), "\",result=\"success\"} 1")));
}

TEST(AlertmanagerClientTest, BackoffIsCappedAtMaxBackoff) {
  AlertmanagerOptions o = TestOptions({absl::StrCat("http://127.0.0.1:", ClosedPort())});
  o.initial_backoff = absl::Milliseconds(10);
  o.max_backoff = absl::Milliseconds(40);
  AlertmanagerClient client(o);
  client.Fire(OomAlert());
  // Uncapped, 10+20+40+80+160 ms would allow about 5 attempts in 400 ms; capped at 40 ms
  // (waits of 20..40 ms) there are at least 8.
  std::this_thread::sleep_for(milliseconds(400));
  const uint64_t failures = client.stats().targets.at(0).requests_failure;
  EXPECT_GE(failures, 8u);
  EXPECT_LE(failures, 25u);
  EXPECT_EQ(client.stats().targets.at(0).requests_success, 0u);
}

TEST(AlertmanagerClientTest, RejectedBatchIsDroppedNotRetried) {
  FakeAlertmanager am;
  am.FailNext(1, 400);
  AlertmanagerClient client(TestOptions({am.url()}));
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  ASSERT_TRUE(WaitFor([&] { return client.stats().alerts_dropped == 1; }));
  std::this_thread::sleep_for(milliseconds(100));  // a retry would have come by now
  EXPECT_EQ(am.requests().size(), 1u);
  const AlertmanagerStats s = client.stats();
  EXPECT_EQ(s.targets.at(0).requests_failure, 1u);
  EXPECT_EQ(s.alerts_dropped, 1u);
}

TEST(AlertmanagerClientTest, QueueOverflowDropsTheOldestAndCounts) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.queue_capacity = 4;
  AlertmanagerClient client(o);
  am.Sleep(milliseconds(3000));
  client.Fire(OomAlert("first"));
  ASSERT_TRUE(am.WaitForArrived(1));  // the sender is busy with it
  const auto start = Clock::now();
  for (int i = 0; i < 10; ++i) client.Fire(OomAlert(absl::StrCat("s", i)));
  EXPECT_LT(Ms(Clock::now() - start), 50);  // never blocks the caller
  AlertmanagerStats s = client.stats();
  EXPECT_EQ(s.queue_length, 4u);
  EXPECT_EQ(s.alerts_dropped, 6u);
  const std::string text = Serialize(client);
  EXPECT_THAT(text, HasSubstr("stagewatch_alertmanager_alerts_dropped_total 6"));
  EXPECT_THAT(text, HasSubstr("stagewatch_alertmanager_queue_length 4"));

  am.Release();
  ASSERT_TRUE(am.WaitForAnswered(2));
  const FakeAlertmanager::Request r = am.requests().at(1);
  std::set<std::string> stages;
  for (const Json& a : r.alerts.array) stages.insert(a["labels"]["pipeline_stage"].string);
  EXPECT_EQ(stages, (std::set<std::string>{"s6", "s7", "s8", "s9"}));  // the newest kept
  EXPECT_EQ(client.stats().queue_length, 0u);
}

TEST(AlertmanagerClientTest, SendsBasicAuth) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.basic_auth_user = "stagewatch";
  o.basic_auth_password = "s3cret";
  AlertmanagerClient client(o);
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  // base64("stagewatch:s3cret")
  EXPECT_EQ(am.requests().at(0).authorization, "Basic c3RhZ2V3YXRjaDpzM2NyZXQ=");
}

TEST(AlertmanagerClientTest, SendsBearerToken) {
  FakeAlertmanager am;
  AlertmanagerOptions o = TestOptions({am.url()});
  o.bearer_token = "tok-123";
  AlertmanagerClient client(o);
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  EXPECT_EQ(am.requests().at(0).authorization, "Bearer tok-123");
}

TEST(AlertmanagerClientTest, TimeoutIsHonouredAgainstASleepingServer) {
  FakeAlertmanager am;
  am.Sleep(milliseconds(3000));
  AlertmanagerOptions o = TestOptions({am.url()});
  o.timeout = absl::Milliseconds(200);
  AlertmanagerClient client(o);
  const auto fired = Clock::now();
  client.Fire(OomAlert());
  WaitFor([&] { return client.stats().targets.at(0).requests_failure > 0; });
  const int64_t took = Ms(Clock::now() - fired);
  EXPECT_EQ(client.stats().targets.at(0).requests_failure, 1u);
  EXPECT_GE(took, 180);
  EXPECT_LT(took, 1000);

  am.Release();  // it answers promptly again: the retry gets through
  EXPECT_TRUE(WaitFor([&] { return client.stats().targets.at(0).requests_success == 1; }));
  EXPECT_EQ(client.stats().targets.at(0).requests_failure, 1u);
}

TEST(AlertmanagerClientTest, FailuresAreLoggedWithUrlAndRateLimited) {
  std::ostringstream log;
  Log::Configure(LogLevel::kInfo, LogFormat::kLogfmt);  // the default, which log_test restores
  Log::SetSink(&log);
  const std::string url = absl::StrCat("http://127.0.0.1:", ClosedPort());
  {
    AlertmanagerOptions o = TestOptions({url});
    o.initial_backoff = o.max_backoff = absl::Milliseconds(10);
    AlertmanagerClient client(o);
    client.Fire(OomAlert());
    WaitFor([&] { return client.stats().targets.at(0).requests_failure >= 5; });
    EXPECT_GE(client.stats().targets.at(0).requests_failure, 5u);
  }
  Log::SetSink(nullptr);
  const std::string text = log.str();
  size_t lines = 0;
  for (size_t p = text.find("alertmanager request failed"); p != std::string::npos;
       p = text.find("alertmanager request failed", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << text;
  EXPECT_THAT(text, HasSubstr(url));
  EXPECT_THAT(text, HasSubstr("cannot connect"));
}

TEST(AlertmanagerClientTest, CollectorExportsEveryFamily) {
  FakeAlertmanager am;
  AlertmanagerClient client(TestOptions({am.url()}));
  AlertmanagerCollector collector(&client);
  EXPECT_EQ(collector.name(), "alertmanager");
  std::vector<prometheus::MetricFamily> families;
  ASSERT_TRUE(collector.Collect(&families).ok());
  std::map<std::string, prometheus::MetricType> types;
  for (const auto& f : families) types[f.name] = f.type;
  EXPECT_EQ(types, (std::map<std::string, prometheus::MetricType>{
                       {"stagewatch_alertmanager_requests_total", prometheus::MetricType::Counter},
                       {"stagewatch_alertmanager_alerts_dropped_total",
                        prometheus::MetricType::Counter},
                       {"stagewatch_alertmanager_queue_length", prometheus::MetricType::Gauge},
                       {"stagewatch_alertmanager_last_success_timestamp_seconds",
                        prometheus::MetricType::Gauge}}));
  const std::string before = Serialize(client);
  EXPECT_THAT(before, HasSubstr(absl::StrCat(
                          "stagewatch_alertmanager_last_success_timestamp_seconds{alertmanager=\"",
                          am.url(), "\"} 0")));

  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  client.Fire(OomAlert());
  ASSERT_TRUE(am.WaitForAnswered(1));
  ASSERT_TRUE(WaitFor([&] { return client.stats().targets.at(0).last_success.has_value(); }));
  families.clear();
  ASSERT_TRUE(collector.Collect(&families).ok());
  for (const auto& f : families) {
    if (f.name != "stagewatch_alertmanager_last_success_timestamp_seconds") continue;
    ASSERT_EQ(f.metric.size(), 1u);
    EXPECT_NEAR(f.metric[0].gauge.value, now, 5);
  }
}

TEST(AlertmanagerClientTest, NoUrlsMeansDisabled) {
  AlertmanagerClient client(AlertmanagerOptions{});
  EXPECT_FALSE(client.enabled());
  client.Fire(OomAlert());
  client.Resolve("StagewatchOOMKill", {});
  const AlertmanagerStats s = client.stats();
  EXPECT_TRUE(s.targets.empty());
  EXPECT_EQ(s.queue_length, 0u);
  EXPECT_EQ(s.alerts_dropped, 0u);
}

}  // namespace
}  // namespace stagewatch::exporters
