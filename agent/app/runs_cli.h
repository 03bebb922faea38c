// The run subcommands: `run` (the launcher), `runs list`, `runs show` and `advise`. main.cc
// registers them before parsing and dispatches after loading the configuration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "config/config.h"
#include "runs/runs_list_filter.h"

namespace stagewatch {

class RunsCli {
 public:
  explicit RunsCli(CLI::App& app);

  // Whether `run` was chosen: its refusals exit kExitLauncherRefused. Known once parsing
  // reached it, even when parsing failed.
  bool Launching() const;
  // The exit code of the chosen subcommand; nullopt when none of these was chosen.
  std::optional<int> Dispatch(const Config& config);

 private:
  int Run(const Config& config);
  int List(const Config& config);
  int Show(const Config& config);
  int Advise(const Config& config);
  std::string LedgerPath(const Config& config) const;

  CLI::App* run_ = nullptr;
  CLI::App* runs_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* advise_ = nullptr;

  std::string stage_, run_id_, pipeline_, pipeline_run_, cgroup_parent_, ledger_path_, show_id_;
  std::string advise_format_;  // advise --format
  ListFlags list_flags_;       // runs list's filters
  std::string fields_;         // runs list -o
  int limit_ = 1000;
  bool all_ = false;
  std::string memory_max_, memory_high_, cpu_max_;
  std::optional<uint32_t> cpu_weight_;
  std::optional<std::string> cpuset_cpus_, cpuset_mems_;
  std::vector<std::string> command_;
  bool json_ = false;
  bool follow_ = false;  // runs show --follow
};

}  // namespace stagewatch
