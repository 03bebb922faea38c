#include "exporters/http/basic_auth.h"

#include <crypt.h>
#include <gnutls/gnutls.h>

#include <cstring>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"

namespace stagewatch::exporters {
namespace {

// Checked when the user is unknown, so a wrong user name takes as long as a wrong password.
constexpr const char* kDummyHash = "$2y$10$abcdefghijklmnopqrstuuJ7uw4i0w1E5ZbP7mTPHlR6o6tFOFLvy";
constexpr size_t kMaxHeader = 4096;

bool BcryptMatches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // large (~32 KiB): not on a thread's stack
  const char* result = crypt_r(password.c_str(), hash.c_str(), data.get());
  return result != nullptr && result[0] != '*' && hash.size() == strlen(result) &&
         gnutls_memcmp(result, hash.data(), hash.size()) == 0;
}

}  // namespace

std::optional<BasicCredentials> ParseBasicAuth(std::string_view header) {
  constexpr std::string_view kPrefix = "Basic ";
  if (header.size() <= kPrefix.size() || header.size() > kMaxHeader ||
      !absl::StartsWithIgnoreCase(absl::string_view(header.data(), kPrefix.size()), "basic ")) {
    return std::nullopt;
  }
  std::string decoded;
  const std::string_view encoded = header.substr(kPrefix.size());
  if (!absl::Base64Unescape(absl::string_view(encoded.data(), encoded.size()), &decoded)) {
    return std::nullopt;
  }
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return BasicCredentials{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

bool BasicAuthUsers::Matches(const BasicCredentials& c) const {
  const auto it = users_.find(c.user);
  const bool matches = BcryptMatches(c.password, it == users_.end() ? kDummyHash : it->second);
  return matches && it != users_.end();
}

}  // namespace stagewatch::exporters
