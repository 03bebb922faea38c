// How many failed logins each client address may still make: a token bucket per address (IPv4,
// or an IPv6 /64, which one host or one user usually holds), so one address cannot keep the
// password checks busy. Bounded in the addresses it remembers. Not thread-safe: the caller
// locks. Times are passed in, so tests need no clock.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace stagewatch::exporters {

struct FailureBudgetOptions {
  double burst = 10;                       // failures an address may make at once
  absl::Duration refill = absl::Seconds(1);  // one more failure allowed after each of these
  size_t max_addresses = 4096;
};

class FailureBudget {
 public:
  explicit FailureBudget(FailureBudgetOptions options = {}) : options_(options) {}

  // The key of a client address: its IPv4 address, or the /64 of an IPv6 one (an IPv4-mapped
  // IPv6 address counts as IPv4). "" for other families (a Unix socket): never limited.
  static std::string KeyOf(const sockaddr* address);

  // Takes one failure from `key`'s budget; false (and nothing taken) when none is left.
  bool Take(const std::string& key, absl::Time now);
  // Gives back one taken with Take (the login it was held for succeeded).
  void Refund(const std::string& key);

  size_t addresses() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens;
    absl::Time at;  // when tokens was last brought up to date
  };
  double Refilled(const Bucket& b, absl::Time now) const;
  // Makes room for one more address: forgets those whose budget is whole again, or, when
  // none is, the one seen longest ago.
  void MakeRoom(absl::Time now);

  const FailureBudgetOptions options_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace stagewatch::exporters
