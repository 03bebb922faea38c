#include "exporters/metrics/collector.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exporters/metrics/metric_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch::exporters {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kDuration[] = "stagewatch_scrape_collector_duration_seconds";
constexpr char kSuccess[] = "stagewatch_scrape_collector_success";

// A collector whose behaviour is a lambda.
class FakeCollector : public Collector {
 public:
  using Body = std::function<absl::Status(std::vector<prometheus::MetricFamily>*)>;
  FakeCollector(std::string name, Body body) : name_(std::move(name)), body_(std::move(body)) {}
  std::string_view name() const override { return name_; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>* out) override { return body_(out); }

 private:
  std::string name_;
  Body body_;
};

std::unique_ptr<Collector> Emitting(std::string name, std::string family, double value,
                                    absl::Status status = absl::OkStatus()) {
  return std::make_unique<FakeCollector>(
      std::move(name), [family, value, status](std::vector<prometheus::MetricFamily>* out) {
        auto f = CounterFamily(family, "Test.");
        AddCounter(&f, {}, value);
        out->push_back(std::move(f));
        return status;
      });
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families,
                                     const std::string& name) {
  const prometheus::MetricFamily* found = nullptr;
  for (const auto& f : families) {
    if (f.name == name) {
      EXPECT_EQ(found, nullptr) << "family " << name << " appears twice";
      found = &f;
    }
  }
  return found;
}

// collector label → gauge value, in output order.
std::vector<std::pair<std::string, double>> ByCollector(const prometheus::MetricFamily& f) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& m : f.metric) {
    EXPECT_EQ(m.label.size(), 1u);
    EXPECT_EQ(m.label.at(0).name, "collector");
    out.emplace_back(m.label.at(0).value, m.gauge.value);
  }
  return out;
}

std::vector<std::string> Names(const std::vector<prometheus::MetricFamily>& families) {
  std::vector<std::string> names;
  for (const auto& f : families) names.push_back(f.name);
  return names;
}

TEST(CollectorRegistryTest, EmptyRegistryGivesEmptySelfFamilies) {
  CollectorRegistry registry;
  auto families = registry.CollectAll();
  EXPECT_THAT(Names(families), ElementsAre(kDuration, kSuccess));
  EXPECT_TRUE(families[0].metric.empty());
  EXPECT_EQ(families[0].help, "Duration of a collector scrape.");
  EXPECT_EQ(families[1].help, "Whether a collector succeeded.");
  EXPECT_EQ(families[1].type, prometheus::MetricType::Gauge);
}

TEST(CollectorRegistryTest, DurationAndSuccessPerCollectorInOrder) {
  CollectorRegistry registry;
  registry.Add(Emitting("alpha", "stagewatch_a_total", 1));
  registry.Add(std::make_unique<FakeCollector>("slow", [](auto*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return absl::OkStatus();
  }));
  registry.Add(Emitting("beta", "stagewatch_b_total", 2));

  auto families = registry.CollectAll();
  // Collector families first, in collector order; self-metrics last.
  EXPECT_THAT(Names(families),
              ElementsAre("stagewatch_a_total", "stagewatch_b_total", kDuration, kSuccess));

  auto success = ByCollector(*Find(families, kSuccess));
  EXPECT_THAT(success, ElementsAre(Pair("alpha", 1.0), Pair("slow", 1.0), Pair("beta", 1.0)));

  auto duration = ByCollector(*Find(families, kDuration));
  ASSERT_EQ(duration.size(), 3u);
  EXPECT_EQ(duration[0].first, "alpha");
  EXPECT_EQ(duration[1].first, "slow");
  EXPECT_EQ(duration[2].first, "beta");
  EXPECT_GE(duration[0].second, 0.0);
  EXPECT_GE(duration[1].second, 0.020);
  EXPECT_LT(duration[1].second, 5.0);  // seconds, not ms or ns
  EXPECT_LT(duration[0].second, duration[1].second);
}

TEST(CollectorRegistryTest, FailingCollectorKeepsPartialFamiliesAndReportsError) {
  CollectorRegistry registry;
  std::vector<std::pair<std::string, absl::Status>> errors;
  registry.SetErrorHandler([&errors](std::string_view collector, const absl::Status& status) {
    errors.emplace_back(std::string(collector), status);
  });
  registry.Add(Emitting("good", "stagewatch_good_total", 1));
  registry.Add(Emitting("bad", "stagewatch_partial_total", 7,
                        absl::UnavailableError("map lookup failed")));

  auto families = registry.CollectAll();
  const auto* partial = Find(families, "stagewatch_partial_total");
  ASSERT_NE(partial, nullptr);
  ASSERT_EQ(partial->metric.size(), 1u);
  EXPECT_EQ(partial->metric[0].counter.value, 7.0);
  EXPECT_THAT(ByCollector(*Find(families, kSuccess)),
              ElementsAre(Pair("good", 1.0), Pair("bad", 0.0)));
  EXPECT_EQ(Find(families, kDuration)->metric.size(), 2u);

  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first, "bad");
  EXPECT_EQ(errors[0].second.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(errors[0].second.message(), "map lookup failed");
}

TEST(CollectorRegistryTest, FailureWithoutHandlerIsFine) {
  CollectorRegistry registry;
  registry.Add(Emitting("bad", "stagewatch_x_total", 1, absl::InternalError("boom")));
  auto families = registry.CollectAll();
  EXPECT_THAT(ByCollector(*Find(families, kSuccess)), ElementsAre(Pair("bad", 0.0)));
}

TEST(CollectorRegistryTest, SuccessRecoversOnNextScrape) {
  CollectorRegistry registry;
  auto fail = std::make_shared<bool>(true);
  registry.Add(std::make_unique<FakeCollector>("flaky", [fail](auto*) {
    return *fail ? absl::UnavailableError("not yet") : absl::OkStatus();
  }));
  EXPECT_THAT(ByCollector(*Find(registry.CollectAll(), kSuccess)),
              ElementsAre(Pair("flaky", 0.0)));
  *fail = false;
  EXPECT_THAT(ByCollector(*Find(registry.CollectAll(), kSuccess)),
              ElementsAre(Pair("flaky", 1.0)));
}

TEST(CollectorRegistryTest, ThrowingCollectorCountsAsFailure) {
  CollectorRegistry registry;
  std::string message;
  registry.SetErrorHandler(
      [&message](std::string_view, const absl::Status& s) { message = s.ToString(); });
  registry.Add(std::make_unique<FakeCollector>(
      "thrower", [](auto*) -> absl::Status { throw std::runtime_error("kaboom"); }));
  registry.Add(Emitting("after", "stagewatch_after_total", 1));
  auto families = registry.CollectAll();
  EXPECT_THAT(ByCollector(*Find(families, kSuccess)),
              ElementsAre(Pair("thrower", 0.0), Pair("after", 1.0)));
  EXPECT_NE(Find(families, "stagewatch_after_total"), nullptr);
  EXPECT_THAT(message, HasSubstr("kaboom"));
}

TEST(CollectorRegistryTest, DuplicateFamilyNamesAreMerged) {
  CollectorRegistry registry;
  registry.Add(Emitting("one", "stagewatch_shared_total", 1));
  registry.Add(Emitting("two", "stagewatch_other_total", 5));
  registry.Add(Emitting("three", "stagewatch_shared_total", 3));

  auto families = registry.CollectAll();
  EXPECT_THAT(Names(families), ElementsAre("stagewatch_shared_total", "stagewatch_other_total",
                                           kDuration, kSuccess));
  const auto* shared = Find(families, "stagewatch_shared_total");
  ASSERT_NE(shared, nullptr);
  ASSERT_EQ(shared->metric.size(), 2u);
  EXPECT_EQ(shared->metric[0].counter.value, 1.0);
  EXPECT_EQ(shared->metric[1].counter.value, 3.0);

  const std::string text = SerializeText(families);
  size_t type_lines = 0;
  for (size_t pos = 0; (pos = text.find("# TYPE stagewatch_shared_total ", pos)) !=
                       std::string::npos;
       ++pos) {
    ++type_lines;
  }
  EXPECT_EQ(type_lines, 1u) << text;
}

TEST(CollectorRegistryTest, DuplicateNamesWithinOneCollectorAreMerged) {
  CollectorRegistry registry;
  registry.Add(std::make_unique<FakeCollector>("twice", [](auto* out) {
    for (double v : {1.0, 2.0}) {
      auto f = GaugeFamily("stagewatch_g", "G.");
      AddGauge(&f, {{"k", v == 1.0 ? "a" : "b"}}, v);
      out->push_back(std::move(f));
    }
    return absl::OkStatus();
  }));
  auto families = registry.CollectAll();
  EXPECT_EQ(Find(families, "stagewatch_g")->metric.size(), 2u);
}

TEST(CollectorRegistryTest, TypeClashDropsLaterFamilyAndFailsItsCollector) {
  CollectorRegistry registry;
  std::vector<std::string> failed;
  registry.SetErrorHandler([&failed](std::string_view collector, const absl::Status& status) {
    failed.emplace_back(collector);
    EXPECT_THAT(std::string(status.message()), HasSubstr("stagewatch_clash"));
  });
  registry.Add(Emitting("counter", "stagewatch_clash", 1));
  registry.Add(std::make_unique<FakeCollector>("gauge", [](auto* out) {
    auto f = GaugeFamily("stagewatch_clash", "Clash.");
    AddGauge(&f, {}, 9);
    out->push_back(std::move(f));
    return absl::OkStatus();
  }));
  auto families = registry.CollectAll();
  const auto* clash = Find(families, "stagewatch_clash");
  ASSERT_NE(clash, nullptr);
  EXPECT_EQ(clash->type, prometheus::MetricType::Counter);
  EXPECT_EQ(clash->metric.size(), 1u);
  EXPECT_THAT(ByCollector(*Find(families, kSuccess)),
              ElementsAre(Pair("counter", 1.0), Pair("gauge", 0.0)));
  EXPECT_THAT(failed, ElementsAre("gauge"));
}

TEST(CollectorRegistryTest, ScrapesAreSerialised) {
  CollectorRegistry registry;
  auto inside = std::make_shared<std::atomic<int>>(0);
  auto overlaps = std::make_shared<std::atomic<int>>(0);
  registry.Add(std::make_unique<FakeCollector>("c", [inside, overlaps](auto*) {
    if (inside->fetch_add(1) != 0) overlaps->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    inside->fetch_sub(1);
    return absl::OkStatus();
  }));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&registry] {
      for (int i = 0; i < 5; ++i) registry.CollectAll();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps->load(), 0);
}

TEST(CollectorRegistryTest, SelfMetricsTextIsValid) {
  CollectorRegistry registry;
  registry.Add(Emitting("oom", "stagewatch_oom_kills_total", 0));
  const std::string text = SerializeText(registry.CollectAll());
  EXPECT_THAT(text, HasSubstr("# HELP stagewatch_scrape_collector_success Whether a collector "
                              "succeeded.\n# TYPE stagewatch_scrape_collector_success gauge\n"
                              "stagewatch_scrape_collector_success{collector=\"oom\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE stagewatch_scrape_collector_duration_seconds gauge\n"
                              "stagewatch_scrape_collector_duration_seconds{collector=\"oom\"} "));
}

}  // namespace
}  // namespace stagewatch::exporters
