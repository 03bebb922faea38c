// `stagewatch pipelines list` (pipeline runs, newest first) and `stagewatch pipelines show ID`
// (one night: its verdict, its wall against its usual nights, its deadline, and which runs made
// it longer).
#pragma once

#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "config/config.h"

namespace stagewatch {

class PipelinesCli {
 public:
  explicit PipelinesCli(CLI::App& app);

  // The exit code of the chosen subcommand; nullopt when none of these was chosen.
  std::optional<int> Dispatch(const Config& config);

 private:
  int List(const Config& config);
  int Show(const Config& config);
  std::string LedgerPath(const Config& config) const;

  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  std::string pipeline_, id_, ledger_path_;
  int limit_ = 50;
  bool json_ = false;
};

}  // namespace stagewatch
