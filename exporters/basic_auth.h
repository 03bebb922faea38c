// Checks HTTP basic auth credentials against the web configuration's bcrypt hashes.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"

namespace stagewatch::exporters {

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

  bool enabled() const { return !users_.empty(); }

  // `header` is the Authorization header's value ("Basic <base64>"), empty when absent.
  // A bcrypt check costs ~100 ms, so credentials that passed once are remembered by their
  // SHA-256 (never in clear) and later scrapes cost a hash.
  bool Check(std::string_view header);

 private:
  const std::map<std::string, std::string> users_;
  absl::Mutex mu_;
  std::set<std::string> accepted_ ABSL_GUARDED_BY(mu_);  // digests of user:password
};

}  // namespace stagewatch::exporters
