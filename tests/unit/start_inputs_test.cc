// Inputs checked before the agent starts: URLs (one parser for check-config and start),
// files that must be regular and small, capability names.
#include <sys/stat.h>
#include <unistd.h>

#include "bounded_file.h"
#include "capabilities.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http_url.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HttpUrlTest, ParsesWhatTheClientUses) {
  absl::StatusOr<HttpUrl> url = ParseHttpUrl("https://[::1]:9093/am/", "alertmanager URL");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9093);
  EXPECT_EQ(url->prefix, "/am");
  EXPECT_EQ(url->display, "https://[::1]:9093/am");
  EXPECT_EQ(ParseHttpUrl("http://am", "u")->port, 80);
}

TEST(HttpUrlTest, RefusesBrokenUrlsWithoutQuotingSecrets) {
  for (const auto& [raw, why] : std::vector<std::pair<std::string, std::string>>{
           {"http://", "no host"},
           {"https://[::1", "unterminated IPv6"},
           {"https://[::g]:1", "is not an IPv6 address"},
           {"http://a b", "spaces"},
           {"http://am:9093/a b", "spaces"},
           {"http://am:9093/%zz", "percent-encode"},
           {"http://-am", "not a valid host"},
           {"http://a..b", "not a valid host"},
           {"ftp://am", "scheme \"ftp\""}}) {
    absl::StatusOr<HttpUrl> url = ParseHttpUrl(raw, "alertmanager URL");
    ASSERT_FALSE(url.ok()) << raw;
    EXPECT_THAT(std::string(url.status().message()), HasSubstr(why)) << raw;
  }
  absl::StatusOr<HttpUrl> url = ParseHttpUrl("http://user:hunter2@am:9093", "alertmanager URL");
  ASSERT_FALSE(url.ok());
  EXPECT_EQ(url.status().message(), "alertmanager URL \"http://***@am:9093\": credentials in the "
                                    "URL are not supported; use alerting.basic_auth (with "
                                    "password_file) or bearer_token");
  EXPECT_EQ(RedactUrl("http://u:p@h/x@y"), "http://***@h/x@y");
  EXPECT_EQ(RedactUrl("http://h/x@y"), "http://h/x@y");
}

TEST(BoundedFileTest, RefusesWhatIsNotASmallRegularFile) {
  char dir[] = "/tmp/stagewatch-bounded-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(std::string(ReadBoundedFile(fifo, "config file").status().message()),
              HasSubstr("is a FIFO (named pipe); give a regular file"));  // and no block
  EXPECT_THAT(std::string(ReadBoundedFile("/dev/zero", "config file").status().message()),
              HasSubstr("is a character device"));
  EXPECT_THAT(std::string(ReadBoundedFile(dir, "config file").status().message()),
              HasSubstr("is a directory"));
  const std::string file = std::string(dir) + "/f";
  FILE* f = fopen(file.c_str(), "w");
  fputs("0123456789", f);
  fclose(f);
  EXPECT_EQ(ReadBoundedFile(file, "x", 10).value_or(""), "0123456789");
  EXPECT_THAT(std::string(ReadBoundedFile(file, "x", 9).status().message()),
              HasSubstr("is 10 bytes, more than the 9 allowed"));
  EXPECT_EQ(ReadBoundedFile(std::string(dir) + "/none", "x").status().code(),
            absl::StatusCode::kNotFound);
  unlink(file.c_str());
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(CapabilityListTest, ParsesNamesCaseInsensitively) {
  EXPECT_THAT(ParseCapabilityList("").value(), ElementsAre());
  EXPECT_THAT(ParseCapabilityList("cap_net_bind_service, NET_RAW").value(), ElementsAre(10, 13));
  EXPECT_THAT(std::string(ParseCapabilityList("cap_bogus").status().message()),
              HasSubstr("unknown capability \"cap_bogus\""));
}

}  // namespace
}  // namespace stagewatch
