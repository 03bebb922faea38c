#include "exporters/http/failure_budget.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace stagewatch::exporters {

std::string FailureBudget::KeyOf(const sockaddr* address) {
  if (address == nullptr) return "";
  if (address->sa_family == AF_INET) {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(address);
    return std::string(reinterpret_cast<const char*>(&in4->sin_addr), 4);
  }
  if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    const auto* bytes = reinterpret_cast<const char*>(&in6->sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return std::string(bytes + 12, 4);
    return std::string(bytes, 8);  // the /64
  }
  return "";
}

double FailureBudget::Refilled(const Bucket& b, absl::Time now) const {
  const double gained = std::max(0.0, absl::FDivDuration(now - b.at, options_.refill));
  return std::min(options_.burst, b.tokens + gained);
}

void FailureBudget::MakeRoom(absl::Time now) {
  absl::erase_if(buckets_, [&](const auto& kv) { return Refilled(kv.second, now) >= options_.burst; });
  if (buckets_.size() < options_.max_addresses) return;
  auto oldest = std::min_element(buckets_.begin(), buckets_.end(), [](const auto& a, const auto& b) {
    return a.second.at < b.second.at;
  });
  buckets_.erase(oldest);
}

bool FailureBudget::Take(const std::string& key, absl::Time now) {
  if (key.empty()) return true;
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= options_.max_addresses) MakeRoom(now);
    it = buckets_.emplace(key, Bucket{options_.burst, now}).first;
  }
  Bucket& b = it->second;
  b.tokens = Refilled(b, now);
  b.at = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void FailureBudget::Refund(const std::string& key) {
  auto it = buckets_.find(key);
  if (it != buckets_.end()) it->second.tokens = std::min(options_.burst, it->second.tokens + 1);
}

}  // namespace stagewatch::exporters
