// The Alertmanager URL, parsed by libcurl's URL API: what the client relies on, and what it
// refuses with a message that says what to write instead.
#include "config/alertmanager_url.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(AlertmanagerUrlTest, ParsesWhatTheClientUses) {
  absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl("https://[::1]:9093/am/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9093);
  EXPECT_EQ(url->prefix, "/am");
  EXPECT_EQ(url->display, "https://[::1]:9093/am");
  EXPECT_EQ(url->endpoint, "https://[::1]:9093/am/api/v2/alerts");
  EXPECT_EQ(ParseAlertmanagerUrl("http://am")->port, 80);
  EXPECT_EQ(ParseAlertmanagerUrl("https://am")->port, 443);
}

// Edge cases the client depends on: every URL that passes is one curl sends to as shown.
TEST(AlertmanagerUrlTest, NormalizesSchemeSlashesAndDotSegments) {
  absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl("HTTPS://am.example:9443/a/../b///");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->prefix, "/b");
  EXPECT_EQ(url->display, "https://am.example:9443/b");
  EXPECT_EQ(url->endpoint, "https://am.example:9443/b/api/v2/alerts");
  EXPECT_EQ(ParseAlertmanagerUrl("http://am:09093")->port, 9093);
  EXPECT_EQ(ParseAlertmanagerUrl("http://am:9093/%7Eam")->prefix, "/%7Eam");  // kept as written
}

TEST(AlertmanagerUrlTest, RefusesBrokenUrlsSayingWhatToWrite) {
  for (const auto& [raw, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "alertmanager URL is empty"},
           {"am:9093", "no scheme; write http://am:9093 (or https://)"},
           {"ftp://am", "scheme \"ftp\" is not supported; use http:// or https://"},
           {"http://", "no host; write e.g. http://127.0.0.1:9093"},
           {"https://[::1", "unterminated IPv6"},
           {"https://[::g]:1", "\"[::g]\" is not an IPv6 address"},
           {"http://[fe80::1%25eth0]:9093", "zone ID, which is not supported"},
           {"http://::1:9093", "must be in brackets, e.g. http://[::1]:9093"},
           {"http://am:99999", "port \"99999\" is not a number from 1 to 65535"},
           {"http://am:", "port \"\" is not a number from 1 to 65535"},
           {"http://am:0", "port \"0\""},
           {"http://a b", "spaces"},
           {"http://am:9093/a b", "spaces"},
           {"http://am/\xc3\xa9", "non-ASCII"},
           {"http://am:9093/%zz", "percent-encode"},
           {"http://am:9093/a<b", "percent-encode"},
           {"http://-am", "not a valid host"},
           {"http://a..b", "not a valid host"},
           {"http://am{1}:9093", "host \"am{1}\" is not a valid host name"},
           {"http://am:9093/?x=1", "a query or fragment is not allowed"},
           {"http://am:9093/api/v2/alerts/", "/api/v2/alerts is appended"}}) {
    absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl(raw);
    ASSERT_FALSE(url.ok()) << raw;
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << raw;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr(why)) << raw;
  }
}

TEST(AlertmanagerUrlTest, NeverQuotesCredentials) {
  absl::StatusOr<AlertmanagerUrl> url = ParseAlertmanagerUrl("http://user:hunter2@am:9093");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.status().message(), "alertmanager URL \"http://***@am:9093\": credentials in the "
                                    "URL are not supported; use alerting.basic_auth (with "
                                    "password_file) or bearer_token");
  // Nor when the URL is broken elsewhere too.
  url = ParseAlertmanagerUrl("http://user:hunter2@am:70000");
  ASSERT_FALSE(url.ok());
  EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr("hunter2")));
  EXPECT_THAT(std::string(url.status().message()), HasSubstr("port \"70000\""));
  EXPECT_EQ(RedactUrl("http://u:p@h/x@y"), "http://***@h/x@y");
  EXPECT_EQ(RedactUrl("http://h/x@y"), "http://h/x@y");
}

}  // namespace
}  // namespace stagewatch
