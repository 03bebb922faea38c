#include "exporters/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstring>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"

namespace stagewatch::exporters {
namespace {

constexpr size_t kMaxRemembered = 64;  // bounded: one entry per distinct valid credential
// Checked when the user is unknown, so a wrong user name takes as long as a wrong password.
constexpr const char* kDummyHash = "$2y$10$abcdefghijklmnopqrstuuJ7uw4i0w1E5ZbP7mTPHlR6o6tFOFLvy";

bool BcryptMatches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // large (~32 KiB): not on a server thread's stack
  const char* result = crypt_r(password.c_str(), hash.c_str(), data.get());
  return result != nullptr && result[0] != '*' && hash.size() == strlen(result) &&
         CRYPTO_memcmp(result, hash.data(), hash.size()) == 0;
}

std::string Digest(const std::string& credentials) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(credentials.data()), credentials.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

}  // namespace

bool BasicAuth::Check(std::string_view header) {
  if (!enabled()) return true;
  constexpr std::string_view kPrefix = "Basic ";
  if (header.size() <= kPrefix.size() || header.size() > 4096 ||
      !absl::StartsWithIgnoreCase(absl::string_view(header.data(), kPrefix.size()), "basic ")) {
    return false;
  }
  std::string credentials;
  const std::string_view encoded = header.substr(kPrefix.size());
  if (!absl::Base64Unescape(absl::string_view(encoded.data(), encoded.size()), &credentials)) {
    return false;
  }
  const size_t colon = credentials.find(':');
  if (colon == std::string::npos) return false;
  const std::string digest = Digest(credentials);
  {
    absl::MutexLock lock(&mu_);
    if (accepted_.count(digest)) return true;
  }
  const std::string user = credentials.substr(0, colon);
  const std::string password = credentials.substr(colon + 1);
  const auto it = users_.find(user);
  const bool ok = BcryptMatches(password, it == users_.end() ? kDummyHash : it->second) &&
                  it != users_.end();
  if (ok) {
    absl::MutexLock lock(&mu_);
    if (accepted_.size() >= kMaxRemembered) accepted_.clear();
    accepted_.insert(digest);
  }
  return ok;
}

}  // namespace stagewatch::exporters
