#include "exporters/http/auth_gate.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <sys/resource.h>
#include <unistd.h>

#include "thread_name.h"

namespace stagewatch::exporters {
namespace {

// Below the serving threads: under a flood of new credentials the checks take what CPU the
// scrapes leave.
constexpr int kCheckThreadNice = 10;

}  // namespace

void AuthGate::Remembered::Clear() {
  set_.clear();
  order_.clear();
}

void AuthGate::Remembered::Insert(const std::string& digest) {
  if (!set_.insert(digest).second) return;
  order_.push_back(digest);
  if (order_.size() > bound_) {
    set_.erase(order_.front());
    order_.pop_front();
  }
}

AuthGate::AuthGate(BasicAuthUsers users, AuthGateOptions options)
    : options_(options),
      users_(std::make_shared<const BasicAuthUsers>(std::move(users))),
      accepted_(options.remembered),
      refused_(options.remembered),
      budget_(options.budget) {
  salt_.resize(16);
  gnutls_rnd(GNUTLS_RND_RANDOM, salt_.data(), salt_.size());
  if (enabled()) StartThreads();
}

bool AuthGate::enabled() const {
  std::lock_guard lock(mu_);
  return !users_->empty();
}

void AuthGate::SetUsers(BasicAuthUsers users) {
  const bool any = !users.empty();
  {
    std::lock_guard lock(mu_);
    users_ = std::make_shared<const BasicAuthUsers>(std::move(users));
    users_generation_++;
    accepted_.Clear();
    refused_.Clear();
  }
  if (any) StartThreads();
}

void AuthGate::StartThreads() {
  std::lock_guard threads_lock(threads_mu_);
  {
    std::lock_guard lock(mu_);
    if (threads_started_ || stopping_) return;
    threads_started_ = true;
  }
  check_thread_ = std::thread([this] {
    NameThisThread("sw-auth");
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kCheckThreadNice);
    CheckLoop();
  });
  throttle_thread_ = std::thread([this] {
    NameThisThread("sw-auth-wait");
    ThrottleLoop();
  });
}

AuthGate::~AuthGate() { Stop(); }

std::string AuthGate::Digest(const BasicCredentials& c) const {
  const std::string text = salt_ + c.user + std::string(1, '\0') + c.password;
  std::string out(32, '\0');
  gnutls_hash_fast(GNUTLS_DIG_SHA256, text.data(), text.size(), out.data());
  return out;
}

std::variant<AuthOutcome, AuthGate::Ticket> AuthGate::Check(std::string_view header,
                                                            const sockaddr* client) {
  // Without users nobody is asked; with them a request without credentials costs nothing.
  {
    std::lock_guard lock(mu_);
    if (users_->empty()) return AuthOutcome::kAccepted;
  }
  std::optional<BasicCredentials> credentials = ParseBasicAuth(header);
  if (!credentials) return AuthOutcome::kRefused;  // costs nothing: not counted as a failure
  Ticket ticket{Ticket::kCheck, *std::move(credentials), "", FailureBudget::KeyOf(client)};
  ticket.digest = Digest(ticket.credentials);
  std::lock_guard lock(mu_);
  if (accepted_.contains(ticket.digest)) return AuthOutcome::kAccepted;
  // A failure, remembered or to be found out, is taken from the client's budget first.
  if (!budget_.Take(ticket.client, absl::Now())) {
    ticket.kind = Ticket::kThrottleFailures;
  } else if (refused_.contains(ticket.digest)) {
    return AuthOutcome::kRefused;
  } else if (checks_queued_ >= options_.queue) {
    ticket.kind = Ticket::kThrottleBusy;
  } else {
    checks_queued_++;
  }
  return ticket;
}

void AuthGate::Wait(Ticket ticket, Done done) {
  std::unique_lock lock(mu_);
  if (stopping_) {
    if (ticket.kind == Ticket::kCheck) checks_queued_--;
    lock.unlock();
    done(AuthOutcome::kThrottled);
    return;
  }
  if (ticket.kind == Ticket::kCheck) {
    checks_.push_back({std::move(ticket), std::move(done), absl::InfinitePast()});
    check_wake_.notify_one();
  } else {
    (ticket.kind == Ticket::kThrottleBusy ? stats_.throttled_busy : stats_.throttled_failures)++;
    throttled_.push_back({std::move(ticket), std::move(done), absl::Now() + options_.throttle_delay});
    throttle_wake_.notify_one();
  }
}

void AuthGate::CheckLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    check_wake_.wait(lock, [this] { return stopping_ || !checks_.empty(); });
    if (stopping_) break;
    Pending p = std::move(checks_.front());
    checks_.pop_front();
    const std::shared_ptr<const BasicAuthUsers> users = users_;
    const uint64_t generation = users_generation_;
    lock.unlock();
    const bool ok = users->Matches(p.ticket.credentials);
    lock.lock();
    checks_queued_--;
    // Checked against users since replaced: answered, but not remembered for the new ones.
    const bool current = generation == users_generation_;
    if (ok) {
      if (current) accepted_.Insert(p.ticket.digest);
      budget_.Refund(p.ticket.client);
      stats_.checks_accepted++;
    } else {
      if (current) refused_.Insert(p.ticket.digest);
      stats_.checks_refused++;
    }
    lock.unlock();
    p.done(ok ? AuthOutcome::kAccepted : AuthOutcome::kRefused);
    lock.lock();
  }
  // Stopping: whatever still waits is answered unchecked.
  std::deque<Pending> left = std::move(checks_);
  checks_.clear();
  checks_queued_ -= left.size();
  lock.unlock();
  for (Pending& p : left) p.done(AuthOutcome::kThrottled);
}

void AuthGate::ThrottleLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_) break;
    if (throttled_.empty()) {
      throttle_wake_.wait(lock);
      continue;
    }
    const absl::Time due = throttled_.front().due;
    if (absl::Now() < due) {
      throttle_wake_.wait_for(lock, absl::ToChronoNanoseconds(due - absl::Now()));
      continue;
    }
    Pending p = std::move(throttled_.front());
    throttled_.pop_front();
    lock.unlock();
    p.done(AuthOutcome::kThrottled);
    lock.lock();
  }
  std::deque<Pending> left = std::move(throttled_);
  throttled_.clear();
  lock.unlock();
  for (Pending& p : left) p.done(AuthOutcome::kThrottled);
}

void AuthGate::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  check_wake_.notify_all();
  throttle_wake_.notify_all();
  // The threads answer what waits; a caller that must know every ticket is answered before
  // going on (a server about to stop) joins them.
  std::lock_guard threads_lock(threads_mu_);
  if (check_thread_.joinable()) check_thread_.join();
  if (throttle_thread_.joinable()) throttle_thread_.join();
}

AuthGateStats AuthGate::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace stagewatch::exporters
