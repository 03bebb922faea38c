// The web configuration file (--web.config.file), in the format Prometheus exporters share
// and `promtool check web-config` validates: TLS for the endpoint and basic auth users with
// bcrypt hashes. See docs/security.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch::exporters {

// How a TLS client's certificate is asked for and checked, by its exporter-toolkit name.
enum class ClientAuth {
  kNoClientCert,                // not asked for
  kRequestClientCert,           // asked for, not required, not verified
  kRequireAnyClientCert,        // required, not verified
  kVerifyClientCertIfGiven,     // verified against client_ca_file when given
  kRequireAndVerifyClientCert,  // required and verified against client_ca_file
};

struct WebTlsConfig {
  std::string cert_file, key_file, client_ca_file;  // PEM files, read at start
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  std::string min_version = "TLS12", max_version = "TLS13";  // TLS10 .. TLS13
};

struct WebServerConfig {
  std::optional<WebTlsConfig> tls;                       // none: plain HTTP
  std::map<std::string, std::string> basic_auth_users;  // user → bcrypt hash; empty: no auth
};

// `source_name` prefixes every error ("file:line:col: message"); all are reported together.
// An empty document is a valid configuration: plain HTTP, no auth.
absl::StatusOr<WebServerConfig> ParseWebConfig(std::string_view yaml_text,
                                               std::string_view source_name);
absl::StatusOr<WebServerConfig> LoadWebConfigFile(const std::string& path);

}  // namespace stagewatch::exporters
