#include "exporters/http/web_config.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bounded_file.h"
#include "config/config_validate.h"
#include "yaml-cpp/yaml.h"
#include "config/yaml_diagnostics.h"

namespace stagewatch::exporters {
namespace {

const std::vector<std::pair<std::string, ClientAuth>>& ClientAuthNames() {
  static const auto* names = new std::vector<std::pair<std::string, ClientAuth>>{
      {"NoClientCert", ClientAuth::kNoClientCert},
      {"RequestClientCert", ClientAuth::kRequestClientCert},
      {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
  };
  return *names;
}

const std::vector<std::string> kTlsVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};

// Keys of the shared format that stagewatch does not implement: refused rather than ignored,
// so nobody believes a setting is in force when it is not.
const std::vector<std::string> kUnsupportedTlsKeys = {
    "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "cert", "key",
    "client_allowed_sans"};

// bcrypt's modular crypt format: $2a$, $2b$ or $2y$, a two-digit cost, 53 characters.
bool IsBcryptHash(const std::string& hash) {
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
         std::isdigit(static_cast<unsigned char>(hash[4])) &&
         std::isdigit(static_cast<unsigned char>(hash[5])) && hash[6] == '$';
}

class WebConfigParser {
 public:
  explicit WebConfigParser(std::string_view source) : diag_(source) {}

  absl::StatusOr<WebServerConfig> Parse(std::string_view text) {
    WebServerConfig config;
    ParseTop(LoadOneDocument(text, diag_), config);
    if (absl::Status s = diag_.ToStatus(); !s.ok()) return s;
    return config;
  }

 private:
  using Handler = std::function<void(const YAML::Node& key, const YAML::Node& value)>;

  // Calls `handle` for each known key; reports unknown, unsupported and repeated ones.
  void ForEachKey(const YAML::Node& map, std::string_view where,
                  const std::vector<std::string>& known,
                  const std::vector<std::string>& unsupported, const Handler& handle) {
    if (map.IsNull()) return;
    if (!map.IsMap()) {
      diag_.Add(map.Mark(), absl::StrFormat("%s must be a map of keys", where));
      return;
    }
    std::vector<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
      if (std::find(unsupported.begin(), unsupported.end(), name) != unsupported.end()) {
        diag_.Add(it->first.Mark(), absl::StrFormat("%s in %s is not supported by stagewatch; "
                                                    "remove it", name, where));
      } else if (std::find(known.begin(), known.end(), name) == known.end()) {
        diag_.Add(it->first.Mark(), config_internal::UnknownNameMessage(
                                        "key", name, absl::StrCat(" in ", std::string(where)), known,
                                        "allowed"));
      } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
        diag_.Add(it->first.Mark(), absl::StrFormat("key \"%s\" in %s is set twice", name, where));
      } else {
        seen.push_back(name);
        handle(it->first, it->second);
      }
    }
  }

  bool ReadString(const YAML::Node& key, const YAML::Node& value, std::string& out) {
    if (!value.IsScalar()) {
      diag_.Add(value.IsNull() ? key.Mark() : value.Mark(),
                absl::StrFormat("%s must be a string", key.Scalar()));
      return false;
    }
    out = value.Scalar();
    return true;
  }

  void ParseTop(const YAML::Node& root, WebServerConfig& config) {
    ForEachKey(root, "the web configuration",
               {"tls_server_config", "basic_auth_users", "http_server_config"}, {},
               [&](const YAML::Node& key, const YAML::Node& value) {
                 const std::string& name = key.Scalar();
                 if (name == "tls_server_config") {
                   ParseTls(key, value, config);
                 } else if (name == "basic_auth_users") {
                   ParseUsers(value, config.basic_auth_users);
                 } else {
                   ForEachKey(value, "http_server_config", {}, {"http2", "headers"},
                              [](const YAML::Node&, const YAML::Node&) {});
                 }
               });
  }

  void ParseTls(const YAML::Node& section_key, const YAML::Node& section,
                WebServerConfig& config) {
    if (section.IsNull()) return;
    WebTlsConfig tls;
    bool auth_set = false;
    ForEachKey(section, "tls_server_config",
               {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
                "max_version"},
               kUnsupportedTlsKeys, [&](const YAML::Node& key, const YAML::Node& value) {
                 const std::string& name = key.Scalar();
                 std::string text;
                 if (!ReadString(key, value, text)) return;
                 if (name == "cert_file") tls.cert_file = text;
                 if (name == "key_file") tls.key_file = text;
                 if (name == "client_ca_file") tls.client_ca_file = text;
                 if (name == "client_auth_type") auth_set = ReadClientAuth(value, text, tls);
                 if (name == "min_version" && ReadVersion(value, text)) tls.min_version = text;
                 if (name == "max_version" && ReadVersion(value, text)) tls.max_version = text;
               });
    if (!section.IsMap()) return;
    if (tls.cert_file.empty() || tls.key_file.empty()) {
      diag_.Add(section_key.Mark(), "tls_server_config needs both cert_file and key_file");
      return;
    }
    const bool verifies = tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                          tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
    if (verifies && tls.client_ca_file.empty()) {
      diag_.Add(section_key.Mark(), "tls_server_config: this client_auth_type verifies client "
                                    "certificates and needs client_ca_file");
    }
    if (!tls.client_ca_file.empty() && !auth_set) {
      diag_.Add(section_key.Mark(), "tls_server_config: client_ca_file is set without "
                                    "client_auth_type; add e.g. client_auth_type: "
                                    "RequireAndVerifyClientCert");
    }
    if (tls.client_auth == ClientAuth::kRequireAnyClientCert && tls.client_ca_file.empty()) {
      diag_.Add(section_key.Mark(), "tls_server_config: RequireAnyClientCert needs "
                                    "client_ca_file in stagewatch (the CA list it sends)");
    }
    if (std::find(kTlsVersions.begin(), kTlsVersions.end(), tls.min_version) >
        std::find(kTlsVersions.begin(), kTlsVersions.end(), tls.max_version)) {
      diag_.Add(section_key.Mark(), "tls_server_config: min_version is above max_version");
    }
    config.tls = tls;
  }

  bool ReadClientAuth(const YAML::Node& value, const std::string& text, WebTlsConfig& tls) {
    for (const auto& [name, auth] : ClientAuthNames()) {
      if (name == text) {
        tls.client_auth = auth;
        return true;
      }
    }
    std::vector<std::string> names;
    for (const auto& entry : ClientAuthNames()) names.push_back(entry.first);
    diag_.Add(value.Mark(), config_internal::UnknownNameMessage("client_auth_type", text, "",
                                                                names, "allowed"));
    return false;
  }

  bool ReadVersion(const YAML::Node& value, const std::string& text) {
    if (std::find(kTlsVersions.begin(), kTlsVersions.end(), text) != kTlsVersions.end()) {
      return true;
    }
    diag_.Add(value.Mark(), config_internal::UnknownNameMessage("TLS version", text, "",
                                                                kTlsVersions, "allowed"));
    return false;
  }

  void ParseUsers(const YAML::Node& users, std::map<std::string, std::string>& out) {
    if (users.IsNull()) return;
    if (!users.IsMap()) {
      diag_.Add(users.Mark(), "basic_auth_users must be a map of user: bcrypt hash");
      return;
    }
    for (auto it = users.begin(); it != users.end(); ++it) {
      const std::string user = it->first.IsScalar() ? it->first.Scalar() : "";
      if (user.empty() || user.find(':') != std::string::npos) {
        diag_.Add(it->first.Mark(), "a basic auth user name must be non-empty, without \":\"");
        continue;
      }
      if (out.count(user)) {
        diag_.Add(it->first.Mark(), absl::StrFormat("basic auth user \"%s\" is listed twice", user));
        continue;
      }
      // The hash is never quoted back: it is a secret too.
      if (!it->second.IsScalar() || !IsBcryptHash(it->second.Scalar())) {
        diag_.Add(it->second.IsNull() ? it->first.Mark() : it->second.Mark(),
                  absl::StrFormat("the password of basic auth user \"%s\" must be a bcrypt hash "
                                  "($2y$..., 60 characters), e.g. from htpasswd -nBC 10 %s",
                                  user, user));
        continue;
      }
      out[user] = it->second.Scalar();
    }
  }

  Diagnostics diag_;
};

}  // namespace

absl::StatusOr<WebServerConfig> ParseWebConfig(std::string_view yaml_text,
                                               std::string_view source_name) {
  return ParseYamlText(yaml_text, source_name,
                       [&] { return WebConfigParser(source_name).Parse(yaml_text); });
}

absl::StatusOr<WebServerConfig> LoadWebConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, "web config file");
  if (!text.ok()) return text.status();
  absl::StatusOr<WebServerConfig> config = ParseWebConfig(*text, path);
  if (!config.ok() || !config->tls) return config;
  // As other exporters do, relative file names are relative to the web config file.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  for (std::string* file :
       {&config->tls->cert_file, &config->tls->key_file, &config->tls->client_ca_file}) {
    if (!file->empty() && (*file)[0] != '/') *file = absl::StrCat(dir, "/", *file);
  }
  return config;
}

}  // namespace stagewatch::exporters
