// `stagewatch results RUN_ID name=value...` (or --file PATH) records what a run computed, for
// a run no launcher started; and `stagewatch runs compare A B` puts two runs side by side.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "config/config.h"

namespace stagewatch {

class ResultsCli {
 public:
  // Adds `results`, and `compare` under the `runs` subcommand (made by RunsCli first).
  explicit ResultsCli(CLI::App& app);

  // The exit code of the chosen subcommand; nullopt when none of these was chosen.
  std::optional<int> Dispatch(const Config& config);

 private:
  int Record(const Config& config);
  int Compare(const Config& config);
  std::string LedgerPath(const Config& config) const;

  CLI::App* results_ = nullptr;
  CLI::App* compare_ = nullptr;
  std::string run_id_, file_, ledger_path_, compare_a_, compare_b_;
  std::vector<std::string> words_;
  bool json_ = false;
};

}  // namespace stagewatch
