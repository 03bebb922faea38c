// A pipeline run end to end: four real `stagewatch run`s of one pipeline run (ingest, then
// features, then train beside validate) beneath this test's cgroup while a real agent runs, and
// /pipelines/<id> rendered by real headless Chromium at 1200 px: a bar per run, each at the x
// and of the width its start and end in the ledger give on the night's time axis, each linking
// to its run.
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "test_support.h"
#include "units.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::AgentProcess;
using testing::TestCgroup;

constexpr char kNight[] = "e2e-night-1";
// Busy for about `seconds`, so the run has CPU time and points to draw.
std::vector<std::string> Busy(double seconds) {
  return {"python3", "-c",
          "import time\nt = time.time()\nwhile time.time() - t < " + std::to_string(seconds) +
              ": pass\n"};
}

// The attributes of each <rect class="bar ..."> in `dom`, in order.
std::vector<std::map<std::string, std::string>> Bars(const std::string& dom) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex bar("<rect( [^>]*class=\"bar [^\"]*\"[^>]*)>");
  const std::regex attribute("([a-z-]+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(dom.begin(), dom.end(), bar), end; it != end; ++it) {
    const std::string attrs = (*it)[1];
    auto& e = out.emplace_back();
    for (std::sregex_iterator a(attrs.begin(), attrs.end(), attribute); a != end; ++a) {
      e[(*a)[1]] = (*a)[2];
    }
  }
  return out;
}

std::string Attribute(const std::string& dom, const std::string& name) {
  std::smatch m;
  const std::regex r(name + "=\"([^\"]*)\"");
  return std::regex_search(dom, m, r) ? std::string(m[1]) : "";
}

absl::Time Time(const std::string& text) {
  absl::StatusOr<absl::Time> t = ParseRfc3339(text);
  EXPECT_TRUE(t.ok()) << text;
  return t.value_or(absl::UnixEpoch());
}

class PipelinesPagesE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    char tmpl[] = "/tmp/stagewatch-pipelines-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ledger_ = dir_ + "/ledger.db";
    config_ = dir_ + "/config.yaml";
    testing::WriteFile(config_, "memory:\n  sample_interval: 200ms\n");
    cgroup_ = std::make_unique<TestCgroup>(
        "pipeline-pages", std::vector<std::string>{"cpu", "cpuacct", "pressure"});
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<AgentProcess> Launch(const std::string& stage, std::vector<std::string> cmd) {
    std::vector<std::string> args = {"--config.file", config_, "run", "--stage", stage,
                                     "--run-id", stage + "-1", "--pipeline", "nightly",
                                     "--pipeline-run", kNight, "--ledger.path", ledger_,
                                     "--cgroup.parent", cgroup_->path(), "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    return std::make_unique<AgentProcess>(args);
  }

  std::string dir_, ledger_, config_;
  std::unique_ptr<TestCgroup> cgroup_;
};

TEST_F(PipelinesPagesE2E, ANightsFourRunsAreBarsOnOneTimeAxisInChromium) {
  ASSERT_TRUE(std::filesystem::exists(testing::kChromium)) << "install Debian's chromium";
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger_});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  auto ingest = Launch("ingest", {"sleep", "0.5"});
  ASSERT_EQ(ingest->WaitExit(60000), 0) << ingest->log();
  auto features = Launch("features", Busy(0.5));
  ASSERT_EQ(features->WaitExit(60000), 0) << features->log();
  auto train = Launch("train", Busy(1.5));
  auto validate = Launch("validate", {"sleep", "0.8"});
  ASSERT_EQ(train->WaitExit(60000), 0) << train->log();
  ASSERT_EQ(validate->WaitExit(60000), 0) << validate->log();

  // The ledger's times, as the API gives them.
  httplib::Client client("127.0.0.1", agent.port());
  auto api = client.Get((std::string("/api/v1/pipelines/") + kNight).c_str());
  ASSERT_TRUE(api) << agent.log();
  ASSERT_EQ(api->status, 200) << api->body;
  const nlohmann::json night = nlohmann::json::parse(api->body);
  EXPECT_EQ(night["pipeline"], "nightly");
  ASSERT_EQ(night["runs"].size(), 4u) << api->body;
  std::map<std::string, std::pair<absl::Time, absl::Time>> ledger_times;
  for (const auto& r : night["runs"]) {
    ASSERT_TRUE(r["end"].is_string()) << r.dump();
    ledger_times[r["id"]] = {Time(r["start"]), Time(r["end"])};
  }
  const absl::Time from = Time(night["first_start"]), to = Time(night["last_end"]);
  // train and validate ran side by side, after features.
  EXPECT_LT(ledger_times["train-1"].first, ledger_times["validate-1"].second);
  EXPECT_LT(ledger_times["validate-1"].first, ledger_times["train-1"].second);
  EXPECT_LE(ledger_times["features-1"].second, ledger_times["train-1"].first);

  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port()) + "/pipelines/" +
                          kNight + "?pipeline=nightly";
  const std::string dom = testing::HeadlessChromium(dir_ + "/chromium-profile", "--dump-dom",
                                                    url, 1200, 1000);
  ASSERT_THAT(dom, HasSubstr("id=\"timeline\"")) << dom;
  EXPECT_EQ(Time(Attribute(dom, "data-from")), from);
  EXPECT_EQ(Time(Attribute(dom, "data-to")), to);
  const double left = std::stod(Attribute(dom, "data-plot-left"));
  const double width = std::stod(Attribute(dom, "data-plot-width"));
  const double span = absl::ToDoubleSeconds(to - from);
  ASSERT_GT(span, 0);
  const auto bars = Bars(dom);
  ASSERT_EQ(bars.size(), 4u) << dom;
  std::set<std::string> seen;
  for (const auto& bar : bars) {
    const std::string id = bar.at("data-run");
    ASSERT_TRUE(ledger_times.count(id)) << id;
    seen.insert(id);
    const auto [start, end] = ledger_times[id];
    EXPECT_EQ(Time(bar.at("data-start")), start) << id;
    EXPECT_EQ(Time(bar.at("data-end")), end) << id;
    const double x = left + width * absl::ToDoubleSeconds(start - from) / span;
    const double w = width * absl::ToDoubleSeconds(end - start) / span;
    EXPECT_NEAR(std::stod(bar.at("x")), x, 0.01) << id;
    EXPECT_NEAR(std::stod(bar.at("width")), std::max(w, 1.0), 0.01) << id;
    EXPECT_THAT(dom, HasSubstr("<a href=\"/runs/" + id + "\"><rect class=\"bar")) << id;
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_THAT(dom, HasSubstr("Pipeline run " + std::string(kNight) + " of nightly"));
}

}  // namespace
}  // namespace stagewatch
