// The web configuration file: the exporter-toolkit format, strict, with file:line:col errors.
#include "exporters/http/web_config.h"

#include <crypt.h>

#include <memory>
#include <regex>

#include "absl/strings/escaping.h"
#include "exporters/http/basic_auth.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "source_scan.h"

namespace stagewatch::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kHash = "$2y$10$abcdefghijklmnopqrstuuJ7uw4i0w1E5ZbP7mTPHlR6o6tFOFLvy";

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<WebServerConfig> c = ParseWebConfig(yaml, "web.yml");
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(WebConfigTest, EmptyFileIsPlainHttpWithoutAuth) {
  absl::StatusOr<WebServerConfig> c = ParseWebConfig("", "web.yml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->tls.has_value());
  EXPECT_TRUE(c->basic_auth_users.empty());
}

TEST(WebConfigTest, ReadsTlsAndUsers) {
  absl::StatusOr<WebServerConfig> c = ParseWebConfig(
      std::string("tls_server_config:\n  cert_file: /c.pem\n  key_file: /k.pem\n"
                  "  client_ca_file: /ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n"
                  "  min_version: TLS13\nbasic_auth_users:\n  alice: ") + kHash + "\n",
      "web.yml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->cert_file, "/c.pem");
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->tls->min_version, "TLS13");
  EXPECT_EQ(c->basic_auth_users.at("alice"), kHash);
}

TEST(WebConfigTest, MistakesAreReportedWithTheirPosition) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: /c.pem\n"),
              HasSubstr("web.yml:1:1: tls_server_config needs both cert_file and key_file"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_fil: /c.pem\n"),
              HasSubstr("web.yml:2:3: unknown key \"cert_fil\" in tls_server_config; did you "
                        "mean \"cert_file\"?"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n"),
              HasSubstr("web.yml:4:16: unknown TLS version \"TLS14\""));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                      "  client_auth_type: RequireAndVerifyClientCert\n"),
              HasSubstr("needs client_ca_file"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                      "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"),
              HasSubstr("web.yml:4:3: cipher_suites in tls_server_config is not supported"));
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  bob: hunter2\n"),
              HasSubstr("web.yml:2:8: the password of basic auth user \"bob\" must be a bcrypt "
                        "hash"));
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  bob: hunter2\n"), Not(HasSubstr("hunter2")));
  EXPECT_THAT(ErrorOf("basic_auth_users: [a]\n"),
              HasSubstr("web.yml:1:19: basic_auth_users must be a map"));
  EXPECT_THAT(ErrorOf("a: 1\n---\nb: 2\n"), HasSubstr("expected one YAML document"));
  EXPECT_THAT(ErrorOf(","), HasSubstr("web.yml:1:1: unexpected character"));
  // A key with an escaped line break is quoted back escaped: one problem per line.
  EXPECT_THAT(ErrorOf("\"a\\nb\": 1\n"), HasSubstr("unknown key \"a\\x0ab\""));
  EXPECT_THAT(ErrorOf("a: 1\n\x01\n"), HasSubstr("web.yml:2:1: control character 0x01"));
}

// docs/security.md lists the keys of the shared format stagewatch refuses; each is refused.
TEST(WebConfigTest, TheKeysTheDocsCallRefusedAreRefused) {
  const std::string doc = testing::SourceText("docs/security.md");
  const size_t start = doc.find("Keys of that format that stagewatch does not implement");
  ASSERT_NE(start, std::string::npos);
  const std::string sentence = doc.substr(start, doc.find("refused", start) - start);
  static const std::regex kKey("`([a-z_]+)\\.([a-z0-9_]+)`");
  int keys = 0;
  for (std::sregex_iterator it(sentence.begin(), sentence.end(), kKey), end; it != end; ++it) {
    const std::string section = (*it)[1], key = (*it)[2];
    EXPECT_THAT(ErrorOf(section + ":\n  " + key + ": x\n"),
                HasSubstr(key + " in " + section + " is not supported by stagewatch"));
    ++keys;
  }
  EXPECT_GE(keys, 8);
  EXPECT_EQ(ErrorOf("http_server_config: {}\n"), "");  // as the docs say, empty is accepted
}

TEST(BasicAuthTest, ParsesOnlyWellFormedBasicHeaders) {
  auto header = [](const std::string& credentials) {
    return "Basic " + absl::Base64Escape(credentials);
  };
  std::optional<BasicCredentials> c = ParseBasicAuth(header("alice:p:w"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "p:w");  // the first colon ends the user
  EXPECT_TRUE(ParseBasicAuth("basic " + absl::Base64Escape("a:b")).has_value());
  EXPECT_FALSE(ParseBasicAuth(header("alicepw")).has_value());
  EXPECT_FALSE(ParseBasicAuth("Bearer x").has_value());
  EXPECT_FALSE(ParseBasicAuth("").has_value());
  EXPECT_FALSE(ParseBasicAuth("Basic !!!not-base64").has_value());
  EXPECT_FALSE(ParseBasicAuth(header("a:" + std::string(4096, 'x'))).has_value());
}

TEST(BasicAuthTest, MatchesOnlyTheRightUserAndPassword) {
  auto data = std::make_unique<crypt_data>();
  const char* salt = crypt_gensalt_rn("$2y$", 4, nullptr, 0, data->setting, sizeof(data->setting));
  ASSERT_NE(salt, nullptr);
  const BasicAuthUsers users({{"alice", crypt_r("pw", salt, data.get())}});
  EXPECT_TRUE(users.Matches({"alice", "pw"}));
  EXPECT_FALSE(users.Matches({"alice", "pW"}));
  EXPECT_FALSE(users.Matches({"bob", "pw"}));
  EXPECT_FALSE(users.Matches({"alice", ""}));
  EXPECT_TRUE(BasicAuthUsers({}).empty());
}

}  // namespace
}  // namespace stagewatch::exporters
