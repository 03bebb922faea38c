// Helpers shared by the accuracy suite (accuracy_*_test.cc): an agent started on a
// configuration of the test's own, scrapes, and the kernel files the figures are checked against.
#pragma once

#include <unistd.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch::accuracy {

// A stage name no other test on the host uses.
inline std::string StageName(const std::string& base) {
  return "acc-" + base + "-" + std::to_string(getpid());
}

inline std::string Series(const std::string& family, const std::string& stage,
                          const std::string& more_labels = "") {
  return family + "{pipeline_stage=\"" + stage + "\"" +
         (more_labels.empty() ? "" : "," + more_labels) + "}";
}

// A configuration with the one stage `stage`, matched by its cgroup's name (discovery off, so
// that stages other tests make on the host stay out), sampled every 100 ms; then `more`.
inline std::string StageConfig(const std::string& stage, const std::string& more = "") {
  return "discovery:\n  enabled: false\nstages:\n  - name: " + stage +
         "\n    cgroup_paths: [\"/**/" + stage + "\"]\nmemory:\n  sample_interval: 100ms\n" + more;
}

// The agent on `yaml` (unlinked when it goes), listening on an ephemeral loopback port.
class Agent {
 public:
  explicit Agent(const std::string& yaml, std::vector<std::string> extra = {})
      : config_(testing::WriteTempConfig(yaml)) {
    std::vector<std::string> args = {"--config.file", config_, "--web.listen-address",
                                     "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = std::make_unique<testing::AgentProcess>(args);
  }
  ~Agent() { unlink(config_.c_str()); }
  testing::AgentProcess& process() { return *process_; }
  bool Ready() { return process_->WaitListening(); }
  std::string Text() { return process_->Get("/metrics").value_or(""); }
  testing::Scrape Scrape() { return testing::ParseExposition(Text()); }
  std::string log() const { return process_->log(); }

 private:
  std::string config_;
  std::unique_ptr<testing::AgentProcess> process_;
};

// PSI totals of a pressure file in seconds: some and full.
struct Pressure {
  double some = 0, full = 0;
};
inline Pressure ReadPressure(const std::string& path) {
  const std::string text = testing::ReadFile(path);
  auto total = [&](const std::string& line_start) {
    const size_t line = text.find(line_start);
    if (line == std::string::npos) return 0.0;
    const size_t at = text.find("total=", line);
    return at == std::string::npos ? 0.0 : std::stoull(text.substr(at + 6)) * 1e-6;
  };
  return {total("some"), total("full")};
}

}  // namespace stagewatch::accuracy
