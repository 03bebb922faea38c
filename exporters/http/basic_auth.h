// HTTP basic auth credentials: the Authorization header parsed, and a password checked against
// the web configuration's bcrypt hashes. The check is slow on purpose; exporters/http/auth_gate.h
// decides when it runs and on which thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace stagewatch::exporters {

struct BasicCredentials {
  std::string user;
  std::string password;
};

// `header` is the Authorization header's value ("Basic <base64 of user:password>"); nullopt
// when it is absent, malformed or longer than 4 KiB.
std::optional<BasicCredentials> ParseBasicAuth(std::string_view header);

class BasicAuthUsers {
 public:
  explicit BasicAuthUsers(std::map<std::string, std::string> users) : users_(std::move(users)) {}
  bool empty() const { return users_.empty(); }
  // One bcrypt comparison: ~30 ms at cost 10. An unknown user costs the same as a wrong
  // password, so timing does not tell which user names exist.
  bool Matches(const BasicCredentials& credentials) const;

 private:
  const std::map<std::string, std::string> users_;  // user → bcrypt hash
};

}  // namespace stagewatch::exporters
