// Basic auth that a flood of wrong passwords cannot turn into a denial of service.
//
// A bcrypt check costs ~30 ms of CPU, so checking every request on the threads that serve
// scrapes lets anyone who reaches the port stall them. The gate instead:
// - remembers the outcome of every credential it checked (by a salted SHA-256 of user and
//   password, never in clear; outcomes are forgotten when the users change), so a scraper with
//   the right password costs a hash, and a repeated wrong one no bcrypt;
// - runs the checks it must on one low-priority thread of its own, with a bounded queue;
// - gives each client address a budget of failed logins (exporters/http/failure_budget.h);
// - answers a client over its budget, or one that finds the queue full, with 429 after a delay
//   (the request waits suspended, costing a socket, not a thread), so a looping client is slowed
//   to a request a second per connection instead of spinning on cheap refusals.
// Health checks and requests with a remembered credential never wait for any of this.
#pragma once

#include <sys/socket.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "exporters/http/basic_auth.h"
#include "exporters/http/failure_budget.h"
#include "exporters/metrics/auth_gate_stats.h"

namespace stagewatch::exporters {

enum class AuthOutcome { kAccepted, kRefused, kThrottled };

struct AuthGateOptions {
  size_t queue = 16;  // credentials waiting for their bcrypt check; more are throttled
  absl::Duration throttle_delay = absl::Seconds(1);  // how long a throttled answer waits
  size_t remembered = 1024;  // credentials whose outcome is kept (of each kind)
  FailureBudgetOptions budget;
};

class AuthGate {
 public:
  explicit AuthGate(BasicAuthUsers users, AuthGateOptions options = {});
  ~AuthGate();  // Stop()s and joins its threads
  AuthGate(const AuthGate&) = delete;
  AuthGate& operator=(const AuthGate&) = delete;

  bool enabled() const;
  // Swaps in the users of a re-read web configuration: every remembered outcome is forgotten
  // (a password that was right may be wrong now), and a check under way when they change is
  // answered but not remembered.
  void SetUsers(BasicAuthUsers users);

  // A request the gate answers later: a credential to check, or a throttled client.
  struct Ticket {
    enum Kind { kCheck, kThrottleFailures, kThrottleBusy } kind;
    BasicCredentials credentials;
    std::string digest;
    std::string client;  // FailureBudget key
  };
  // Fast, on the serving thread: the outcome when it is known at once (auth off, no or a
  // malformed header, a remembered credential within the client's budget), else a ticket.
  // `header` is the Authorization header's value ("" when absent).
  std::variant<AuthOutcome, Ticket> Check(std::string_view header, const sockaddr* client);
  // Answers a ticket: `done` runs exactly once, on one of the gate's threads, so the caller
  // must be ready for it (its request suspended) before it calls. Once stopping, `done` runs
  // at once here with kThrottled.
  using Done = std::function<void(AuthOutcome)>;
  void Wait(Ticket ticket, Done done);
  // Answers every waiting ticket now (kThrottled) and every later one at once. For a server
  // that must resume its suspended requests before it stops.
  void Stop();

  AuthGateStats stats() const;

 private:
  struct Pending {
    Ticket ticket;
    Done done;
    absl::Time due;  // throttled tickets: when to answer
  };
  // A set of digests that forgets its oldest past a bound.
  class Remembered {
   public:
    explicit Remembered(size_t bound) : bound_(bound) {}
    bool contains(const std::string& digest) const { return set_.contains(digest); }
    void Clear();
    void Insert(const std::string& digest);

   private:
    size_t bound_;
    absl::flat_hash_set<std::string> set_;
    std::deque<std::string> order_;
  };

  std::string Digest(const BasicCredentials& c) const;
  void StartThreads();  // once, when the gate first has users; mu_ not held
  void CheckLoop();     // the bcrypt thread
  void ThrottleLoop();  // answers throttled tickets when due

  const AuthGateOptions options_;
  std::string salt_;  // random per process: digests mean nothing outside it

  mutable std::mutex mu_;
  std::shared_ptr<const BasicAuthUsers> users_;  // swapped whole; a check holds its own copy
  uint64_t users_generation_ = 0;                // bumped on each swap
  bool threads_started_ = false;
  std::condition_variable check_wake_, throttle_wake_;
  bool stopping_ = false;
  Remembered accepted_, refused_;
  FailureBudget budget_;
  size_t checks_queued_ = 0;  // tickets of kind kCheck handed out and not yet answered
  std::deque<Pending> checks_, throttled_;  // throttled_ is in due order (one fixed delay)
  AuthGateStats stats_;
  // Started once, by the first users (possibly on a reload, from a serving thread) and joined
  // by Stop(), perhaps at the same time: threads_mu_ orders the two.
  std::mutex threads_mu_;
  std::thread check_thread_, throttle_thread_;
};

}  // namespace stagewatch::exporters
