// The auth gate and the failed-login budget it keeps per client address: a password flood
// costs bcrypt only within each address's budget, a known credential is never checked twice,
// and every waiting request is answered.
#include "exporters/http/auth_gate.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <variant>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "exporters/http/failure_budget.h"
#include "gtest/gtest.h"

namespace stagewatch::exporters {
namespace {

sockaddr_in V4(const char* text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

sockaddr_in6 V6(const char* text) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  inet_pton(AF_INET6, text, &a.sin6_addr);
  return a;
}

const sockaddr* As(const auto& a) { return reinterpret_cast<const sockaddr*>(&a); }

TEST(FailureBudgetTest, KeysAnIpv6ClientByItsSlash64AndAMappedOneAsIpv4) {
  const auto a = V6("2001:db8:1:2::1"), b = V6("2001:db8:1:2:ffff::9"), c = V6("2001:db8:1:3::1");
  EXPECT_EQ(FailureBudget::KeyOf(As(a)), FailureBudget::KeyOf(As(b)));
  EXPECT_NE(FailureBudget::KeyOf(As(a)), FailureBudget::KeyOf(As(c)));
  const auto mapped = V6("::ffff:192.0.2.7");
  const auto plain = V4("192.0.2.7");
  EXPECT_EQ(FailureBudget::KeyOf(As(mapped)), FailureBudget::KeyOf(As(plain)));
  EXPECT_NE(FailureBudget::KeyOf(As(V4("192.0.2.8"))), FailureBudget::KeyOf(As(plain)));
  EXPECT_EQ(FailureBudget::KeyOf(nullptr), "");
}

TEST(FailureBudgetTest, AnAddressGetsItsBurstThenOneFailureARefill) {
  FailureBudget budget({.burst = 3, .refill = absl::Seconds(2), .max_addresses = 10});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; i++) EXPECT_TRUE(budget.Take("a", t0)) << i;
  EXPECT_FALSE(budget.Take("a", t0));
  EXPECT_TRUE(budget.Take("b", t0));  // another address has its own
  EXPECT_FALSE(budget.Take("a", t0 + absl::Seconds(1.9)));
  EXPECT_TRUE(budget.Take("a", t0 + absl::Seconds(2.1)));
  EXPECT_FALSE(budget.Take("a", t0 + absl::Seconds(2.2)));
  budget.Refund("a");  // a login that succeeded gives its failure back
  EXPECT_TRUE(budget.Take("a", t0 + absl::Seconds(2.3)));
  EXPECT_TRUE(budget.Take("", t0));  // an address without a key is never limited
}

TEST(FailureBudgetTest, RemembersAtMostItsBoundOfAddresses) {
  FailureBudget budget({.burst = 1, .refill = absl::Hours(1), .max_addresses = 4});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 100; i++) {
    EXPECT_TRUE(budget.Take("addr" + std::to_string(i), t0 + absl::Seconds(i)));
    EXPECT_LE(budget.addresses(), 4u);
  }
  // The newest stay limited; the oldest were forgotten to make room.
  EXPECT_FALSE(budget.Take("addr99", t0 + absl::Seconds(100)));
}

std::string Hash(const std::string& password) {
  auto data = std::make_unique<crypt_data>();
  const char* salt = crypt_gensalt_rn("$2y$", 4, nullptr, 0, data->setting, sizeof(data->setting));
  return crypt_r(password.c_str(), salt, data.get());
}

std::string Header(const std::string& user, const std::string& password) {
  return "Basic " + absl::Base64Escape(user + ":" + password);
}

// Check, and when the gate answers later, wait for it as the server does.
AuthOutcome CheckAndWait(AuthGate& gate, const std::string& header, const sockaddr* client) {
  std::variant<AuthOutcome, AuthGate::Ticket> decided = gate.Check(header, client);
  if (const AuthOutcome* now = std::get_if<AuthOutcome>(&decided)) return *now;
  std::promise<AuthOutcome> answer;
  gate.Wait(std::get<AuthGate::Ticket>(std::move(decided)),
            [&answer](AuthOutcome o) { answer.set_value(o); });
  return answer.get_future().get();
}

class AuthGateTest : public ::testing::Test {
 protected:
  BasicAuthUsers Users() const { return BasicAuthUsers({{"scraper", hash_}}); }
  const std::string hash_ = Hash("right");
  const sockaddr_in good_ = V4("127.0.0.1"), flood_ = V4("127.0.0.2");
};

TEST_F(AuthGateTest, ACredentialIsCheckedOnceWhateverItsOutcome) {
  AuthGate gate(Users());
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(good_)), AuthOutcome::kAccepted);
    EXPECT_EQ(CheckAndWait(gate, Header("scraper", "wrong"), As(good_)), AuthOutcome::kRefused);
  }
  const AuthGateStats s = gate.stats();
  EXPECT_EQ(s.checks_accepted, 1u);
  EXPECT_EQ(s.checks_refused, 1u);
  // Known at once the second time: no ticket, so no thread and no wait.
  EXPECT_TRUE(std::holds_alternative<AuthOutcome>(gate.Check(Header("scraper", "right"), As(good_))));
}

TEST_F(AuthGateTest, NoHeaderOrABadOneIsRefusedAtOnceAndCostsNoBudget) {
  AuthGate gate(Users(), {.budget = {.burst = 1}});
  for (const char* header : {"", "Bearer x", "Basic !!!"}) {
    for (int i = 0; i < 5; i++) {
      auto decided = gate.Check(header, As(flood_));
      ASSERT_TRUE(std::holds_alternative<AuthOutcome>(decided)) << header;
      EXPECT_EQ(std::get<AuthOutcome>(decided), AuthOutcome::kRefused);
    }
  }
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(flood_)), AuthOutcome::kAccepted);
}

TEST_F(AuthGateTest, AFloodOfNewPasswordsCostsAnAddressOnlyItsBudget) {
  AuthGate gate(Users(), {.throttle_delay = absl::Milliseconds(1),
                          .budget = {.burst = 5, .refill = absl::Hours(1)}});
  ASSERT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(good_)), AuthOutcome::kAccepted);
  int refused = 0, throttled = 0;
  for (int i = 0; i < 40; i++) {
    const AuthOutcome o = CheckAndWait(gate, Header("scraper", "guess" + std::to_string(i)),
                                       As(flood_));
    refused += o == AuthOutcome::kRefused;
    throttled += o == AuthOutcome::kThrottled;
    // The scraper that logged in before is never held back by the flood from its host.
    EXPECT_TRUE(std::holds_alternative<AuthOutcome>(gate.Check(Header("scraper", "right"),
                                                               As(flood_))));
  }
  EXPECT_EQ(refused, 5);
  EXPECT_EQ(throttled, 35);
  const AuthGateStats s = gate.stats();
  EXPECT_EQ(s.checks_refused, 5u);  // bcrypt ran for the budget only
  EXPECT_EQ(s.throttled_failures, 35u);
  // A client at another address still logs in.
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(V4("127.0.0.3"))),
            AuthOutcome::kAccepted);
}

TEST_F(AuthGateTest, ARepeatedWrongPasswordStillSpendsTheBudget) {
  AuthGate gate(Users(), {.throttle_delay = absl::Milliseconds(1),
                          .budget = {.burst = 3, .refill = absl::Hours(1)}});
  std::vector<AuthOutcome> outcomes;
  for (int i = 0; i < 5; i++) {
    outcomes.push_back(CheckAndWait(gate, Header("scraper", "wrong"), As(flood_)));
  }
  EXPECT_EQ(outcomes, (std::vector<AuthOutcome>{AuthOutcome::kRefused, AuthOutcome::kRefused,
                                                AuthOutcome::kRefused, AuthOutcome::kThrottled,
                                                AuthOutcome::kThrottled}));
  EXPECT_EQ(gate.stats().checks_refused, 1u);
}

TEST_F(AuthGateTest, AThrottledAnswerWaitsItsDelay) {
  const absl::Duration delay = absl::Milliseconds(300);
  AuthGate gate(Users(), {.throttle_delay = delay, .budget = {.burst = 1, .refill = absl::Hours(1)}});
  ASSERT_EQ(CheckAndWait(gate, Header("scraper", "a"), As(flood_)), AuthOutcome::kRefused);
  const absl::Time asked = absl::Now();
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "b"), As(flood_)), AuthOutcome::kThrottled);
  EXPECT_GE(absl::Now() - asked, delay);
}

TEST_F(AuthGateTest, AFullQueueThrottlesNewCredentials) {
  // Many addresses at once, each within its budget: the queue bounds the checks waiting.
  AuthGate gate(Users(), {.queue = 2, .throttle_delay = absl::Milliseconds(1)});
  std::vector<std::future<AuthOutcome>> answers;
  std::vector<sockaddr_in> clients;
  for (int i = 0; i < 30; i++) clients.push_back(V4(("10.0.0." + std::to_string(i + 1)).c_str()));
  for (int i = 0; i < 30; i++) {
    auto decided = gate.Check(Header("scraper", "guess" + std::to_string(i)), As(clients[i]));
    ASSERT_TRUE(std::holds_alternative<AuthGate::Ticket>(decided));
    auto answer = std::make_shared<std::promise<AuthOutcome>>();
    answers.push_back(answer->get_future());
    gate.Wait(std::get<AuthGate::Ticket>(std::move(decided)),
              [answer](AuthOutcome o) { answer->set_value(o); });
  }
  int busy = 0;
  for (auto& a : answers) busy += a.get() == AuthOutcome::kThrottled;
  // A bcrypt check takes milliseconds; 30 tickets handed out in microseconds find the queue
  // of 2 full nearly every time.
  EXPECT_GE(busy, 20);
  EXPECT_EQ(gate.stats().throttled_busy, static_cast<uint64_t>(busy));
  EXPECT_EQ(gate.stats().checks_refused + busy, 30u);
}

TEST_F(AuthGateTest, StopAnswersEveryWaitingRequestAndLaterOnesAtOnce) {
  AuthGate gate(Users(), {.throttle_delay = absl::Hours(1), .budget = {.burst = 1}});
  std::atomic<int> answered = 0;
  ASSERT_EQ(CheckAndWait(gate, Header("scraper", "a"), As(flood_)), AuthOutcome::kRefused);
  for (int i = 0; i < 3; i++) {  // throttled, due in an hour
    auto decided = gate.Check(Header("scraper", "x" + std::to_string(i)), As(flood_));
    ASSERT_TRUE(std::holds_alternative<AuthGate::Ticket>(decided));
    gate.Wait(std::get<AuthGate::Ticket>(std::move(decided)), [&](AuthOutcome o) {
      EXPECT_EQ(o, AuthOutcome::kThrottled);
      answered++;
    });
  }
  gate.Stop();
  EXPECT_EQ(answered.load(), 3);
  auto decided = gate.Check(Header("scraper", "late"), As(good_));
  ASSERT_TRUE(std::holds_alternative<AuthGate::Ticket>(decided));
  gate.Wait(std::get<AuthGate::Ticket>(std::move(decided)), [&](AuthOutcome) { answered++; });
  EXPECT_EQ(answered.load(), 4);
}

// A re-read web configuration changes a password: the remembered outcomes go with the old one.
TEST_F(AuthGateTest, NewUsersForgetEveryRememberedOutcome) {
  AuthGate gate(Users());
  ASSERT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(good_)), AuthOutcome::kAccepted);
  ASSERT_EQ(CheckAndWait(gate, Header("scraper", "next"), As(good_)), AuthOutcome::kRefused);
  gate.SetUsers(BasicAuthUsers({{"scraper", Hash("next")}}));
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "right"), As(good_)), AuthOutcome::kRefused);
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "next"), As(good_)), AuthOutcome::kAccepted);
}

// Basic auth added by a reload to a server started without it starts asking.
TEST(AuthGateOffTest, UsersSetLaterAreAskedFor) {
  AuthGate gate(BasicAuthUsers({}));
  gate.SetUsers(BasicAuthUsers({{"scraper", Hash("right")}}));
  EXPECT_TRUE(gate.enabled());
  EXPECT_EQ(CheckAndWait(gate, "", nullptr), AuthOutcome::kRefused);
  EXPECT_EQ(CheckAndWait(gate, Header("scraper", "right"), nullptr), AuthOutcome::kAccepted);
  gate.SetUsers(BasicAuthUsers({}));
  EXPECT_EQ(CheckAndWait(gate, "", nullptr), AuthOutcome::kAccepted);
}

TEST(AuthGateOffTest, WithoutUsersEveryRequestIsAccepted) {
  AuthGate gate(BasicAuthUsers({}));
  EXPECT_FALSE(gate.enabled());
  auto decided = gate.Check("", nullptr);
  ASSERT_TRUE(std::holds_alternative<AuthOutcome>(decided));
  EXPECT_EQ(std::get<AuthOutcome>(decided), AuthOutcome::kAccepted);
}

}  // namespace
}  // namespace stagewatch::exporters
