// What the launcher tests share: `stagewatch run` of the built binary with runs beneath the
// test's own cgroup (--cgroup.parent) and a ledger in a temporary directory.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch::testing {

class LauncherFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    cgroup_ = std::make_unique<TestCgroup>("launcher",
        std::vector<std::string>{"cpu", "cpuacct", "cpuset", "pressure"});
    char tmpl[] = "/tmp/stagewatch-launcher-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ledger_ = dir_ + "/ledger.db";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::vector<std::string> Args(const std::string& stage, const std::string& id,
                                const std::vector<std::string>& limits,
                                const std::vector<std::string>& command) {
    std::vector<std::string> args = {"run", "--stage", stage, "--ledger.path", ledger_,
                                     "--cgroup.parent", cgroup_->path()};
    if (!id.empty()) args.insert(args.end(), {"--run-id", id});
    args.insert(args.end(), limits.begin(), limits.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return args;
  }

  // The run's directory in a hierarchy ("" for the keyed one).
  std::string RunDir(const std::string& stage, const std::string& id,
                     const std::string& controller = "") {
    const std::string base = controller.empty() ? cgroup_->dir() : cgroup_->dir(controller);
    return base + "/stagewatch/" + stage + "/" + id;
  }

  // The test cgroup in every hierarchy a run is made in (the keyed one first), each once.
  std::vector<std::string> Bases() {
    std::vector<std::string> bases = {cgroup_->dir()};
    for (const char* controller : {"cpu", "cpuacct", "cpuset", "pressure"}) {
      const std::string dir = cgroup_->dir(controller);
      if (!dir.empty() && std::find(bases.begin(), bases.end(), dir) == bases.end()) {
        bases.push_back(dir);
      }
    }
    return bases;
  }
  // What is left beneath the test cgroup of the launcher's cgroups, in any hierarchy.
  std::vector<std::string> LeftBehind() {
    std::vector<std::string> left;
    for (const std::string& base : Bases()) {
      if (std::filesystem::exists(base + "/stagewatch")) left.push_back(base + "/stagewatch");
    }
    return left;
  }

  RunRecord Recorded(const std::string& id) {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_);
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    if (!ledger.ok()) return {};
    absl::StatusOr<std::optional<RunRecord>> run = (*ledger)->Get(id);
    EXPECT_TRUE(run.ok() && *run) << "run " << id << " is not in the ledger";
    return run.ok() && *run ? **run : RunRecord{};
  }

  // A read of `file` once `condition` holds on it, while the run is alive.
  std::string ReadWhen(const std::string& file, const std::function<bool(const std::string&)>& condition) {
    std::string text;
    WaitUntil([&] { return condition(text = ReadFile(file)); }, 20000);
    return text;
  }

  std::unique_ptr<TestCgroup> cgroup_;
  std::string dir_, ledger_;
};

}  // namespace stagewatch::testing
