// The run pages end to end: a real `stagewatch run` beneath this test's cgroup writes its
// samples to a real SQLite ledger, the agent serves them, and a real headless Chromium renders
// /runs/<id>: the verdict is in the DOM, the charts' lines have points, and the screenshot has
// the memory line's colour in it.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::AgentProcess;
using testing::TestCgroup;

// ~120 MiB held for 3 s while busy, so memory and CPU both draw a line.
constexpr char kWork[] =
    "import time\nb = bytearray(120 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
    "t = time.time()\nwhile time.time() - t < 3: pass\n";

// Counts pixels near the memory line's colour (#0969da) in a PNG, with Debian's python3-pil.
constexpr char kCountPixels[] = R"(
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert('RGB')
w, h = img.size
n = sum(1 for (r, g, b) in img.getdata()
        if abs(r - 9) < 40 and abs(g - 105) < 40 and abs(b - 218) < 40)
print(w, h, n)
)";

class RunsPagesE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    char tmpl[] = "/tmp/stagewatch-pages-XXXXXX";
    dir_ = mkdtemp(tmpl);
    cgroup_ = std::make_unique<TestCgroup>(
        "runs-pages", std::vector<std::string>{"cpu", "cpuacct", "pressure"});
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::string Chromium(const std::string& mode, const std::string& url, int width = 900) {
    return testing::HeadlessChromium(dir_ + "/chromium-profile", mode, url, width, 1200);
  }

  std::string dir_;
  std::unique_ptr<TestCgroup> cgroup_;
};

TEST_F(RunsPagesE2E, ALaunchedRunsPageShowsItsVerdictAndChartsInChromium) {
  ASSERT_TRUE(std::filesystem::exists(testing::kChromium)) << "install Debian's chromium";
  const std::string ledger = dir_ + "/ledger.db";
  const std::string config = dir_ + "/config.yaml";
  testing::WriteFile(config, "memory:\n  sample_interval: 200ms\n");
  AgentProcess run({"--config.file", config, "run", "--stage", "validate", "--run-id",
                    "page-1", "--ledger.path", ledger, "--cgroup.parent", cgroup_->path(),
                    "--memory-max", "400M", "--", "python3", "-c", kWork});
  ASSERT_EQ(run.WaitExit(60000), 0) << run.log();

  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  httplib::Client client("127.0.0.1", agent.port());

  // The JSON: the launcher's samples, against the kernel's own peak for the run.
  auto api = client.Get("/api/v1/runs/page-1");
  ASSERT_TRUE(api) << agent.log();
  ASSERT_EQ(api->status, 200) << api->body;
  nlohmann::json j = nlohmann::json::parse(api->body);
  EXPECT_EQ(j["id"], "page-1");
  const std::string verdict = j["verdict"];
  ASSERT_GE(j["samples"].size(), 8u) << "3 s at 200 ms";
  uint64_t most = 0;
  for (const auto& s : j["samples"]) {
    if (s["memory_bytes"].is_number()) most = std::max(most, s["memory_bytes"].get<uint64_t>());
    EXPECT_EQ(s["memory_limit_bytes"], 400 << 20);
  }
  EXPECT_GE(most, uint64_t{120} << 20);
  EXPECT_LE(most, j["memory_peak_bytes"].get<uint64_t>());

  auto list = client.Get("/api/v1/runs?stage=validate");
  ASSERT_TRUE(list);
  EXPECT_EQ(nlohmann::json::parse(list->body)["runs"][0]["id"], "page-1");
  EXPECT_EQ(client.Get("/runs/nope-1")->status, 404);
  EXPECT_EQ(client.Get("/runs?verdict=splendid")->status, 400);
  EXPECT_EQ(client.Get(("/runs/" + std::string(2000, 'a')).c_str())->status, 414);

  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port()) + "/runs/page-1";
  auto page = client.Get("/runs/page-1");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200);

  // The DOM as Chromium built it: the verdict first, then the charts with their points.
  const std::string dom = Chromium("--dump-dom", url);
  const size_t at = dom.find("id=\"verdict\"");
  ASSERT_NE(at, std::string::npos) << dom;
  EXPECT_THAT(dom.substr(at, 120), HasSubstr(verdict));
  size_t lines = 0, filled = 0;
  for (size_t p = dom.find("<polyline"); p != std::string::npos; p = dom.find("<polyline", p + 1)) {
    ++lines;
    const size_t q = dom.find("points=\"", p);
    const std::string coords = dom.substr(q + 8, dom.find('"', q + 8) - q - 8);
    if (std::count(coords.begin(), coords.end(), ',') >= 8) ++filled;
  }
  EXPECT_GE(lines, 3u) << dom;
  EXPECT_GE(filled, 3u) << "memory, limit and CPU lines with every sample";

  // The screenshot: the memory line is drawn, in its colour.
  const std::string png = dir_ + "/run.png";
  Chromium("--screenshot=" + png, url);
  ASSERT_TRUE(std::filesystem::exists(png));
  auto [rc, counted] = testing::RunWithInput("/usr/bin/python3 - " + png, kCountPixels);
  ASSERT_EQ(rc, 0) << counted;
  int w = 0, h = 0, pixels = 0;
  ASSERT_EQ(sscanf(counted.c_str(), "%d %d %d", &w, &h, &pixels), 3) << counted;
  EXPECT_EQ(w, 900);
  EXPECT_GT(pixels, 200) << "the memory line's pixels in the screenshot";
}

// Run in Chromium beside the page's own: how many pairs of mark labels (OOM kill, anomalies)
// overlap, whether the facts block or the page is wider than the window.
constexpr char kMeasure[] = R"(<script>
addEventListener('load', () => {
  let overlaps = 0;
  for (const svg of document.querySelectorAll('svg.chart')) {
    const boxes = [...svg.querySelectorAll('g.mark text')].map(t => t.getBoundingClientRect());
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
          overlaps++;
      }
  }
  const pre = document.querySelector('pre');
  const out = document.createElement('div');
  out.id = 'measure';
  out.textContent = `marks=${document.querySelectorAll('g.mark').length} overlaps=${overlaps} ` +
      `pre_overflow=${pre.scrollWidth > pre.clientWidth} ` +
      `page_overflow=${document.documentElement.scrollWidth > innerWidth}`;
  document.body.appendChild(out);
});
</script>)";

// A run killed at its end with two anomalies just before, and a command longer than any
// window: at 1200 and 600 px the mark labels do not cover each other and nothing runs off.
TEST_F(RunsPagesE2E, MarkLabelsAndLongCommandsFitAt1200And600Pixels) {
  ASSERT_TRUE(std::filesystem::exists(testing::kChromium)) << "install Debian's chromium";
  const std::string ledger_path = dir_ + "/ledger.db";
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    const absl::Time start = absl::Now() - absl::Minutes(10);
    RunStart s{.id = "crowded-1", .stage = "train",
               .command = {"python3", "train.py", "--data=" + std::string(300, 'x'),
                           "--out=/scratch/" + std::string(120, 'y')},
               .launcher_pid = 1, .start = start};
    s.limits.memory_max_bytes = 1 << 30;
    ASSERT_TRUE((*ledger)->BeginRun(s).ok());
    std::vector<RunSample> samples;
    for (int i = 0; i <= 60; i++) {
      samples.push_back({.at = start + absl::Seconds(10 * i),
                         .memory_bytes = uint64_t(i) << 24, .memory_limit_bytes = 1 << 30,
                         .cpu_cores = 1.0, .memory_pressure = 0.01, .cpu_pressure = 0.0});
    }
    ASSERT_TRUE((*ledger)->AddSamples("crowded-1", samples).ok());
    AgentFacts facts;
    facts.anomalies = {{"memory_climb", start + absl::Seconds(585), "climbing"},
                       {"limit_eta", start + absl::Seconds(592), "limit in 20 s"}};
    facts.anomalies_observed = true;
    facts.oom_kills_userspace = 0;
    ASSERT_TRUE((*ledger)->AddAgentFacts("crowded-1", facts).ok());
    RunEnd end{.end = start + absl::Seconds(600), .signal = SIGKILL};
    end.facts.oom_kills_kernel = 1;
    end.facts.memory_peak_bytes = 1 << 30;
    end.facts.memory_limit_bytes = 1 << 30;
    ASSERT_TRUE((*ledger)->EndRun("crowded-1", end).ok());
  }
  AgentProcess agent({"agent", "--web.listen-address", "127.0.0.1:0", "--ledger.path",
                      ledger_path});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  std::string html = agent.Get("/runs/crowded-1").value_or("");
  ASSERT_NE(html.find("</body>"), std::string::npos) << html;
  html.insert(html.find("</body>"), kMeasure);
  const std::string file = dir_ + "/crowded.html";
  testing::WriteFile(file, html);
  for (int width : {1200, 600}) {
    const std::string dom = Chromium("--dump-dom", "file://" + file, width);
    const std::string tag = "id=\"measure\">";
    const size_t at = dom.find(tag);
    ASSERT_NE(at, std::string::npos) << dom;
    const size_t from = at + tag.size();
    const std::string measured = dom.substr(from, dom.find('<', from) - from);
    EXPECT_EQ(measured, "marks=9 overlaps=0 pre_overflow=false page_overflow=false")
        << "at " << width << " px";
  }
}

}  // namespace
}  // namespace stagewatch
