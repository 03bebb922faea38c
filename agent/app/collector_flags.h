// The --collector.<name> / --no-collector.<name> flag pairs: one per switchable signal of the
// registry (CollectorFlagNames()), over what the configuration file's `collectors:` says.
#pragma once

#include <map>
#include <string>

#include "CLI/CLI.hpp"
#include "config/config.h"

namespace stagewatch {

class CollectorFlags {
 public:
  // Adds the flags to `app`, which binds them to this object: it must outlive the parse.
  explicit CollectorFlags(CLI::App& app);
  CollectorFlags(const CollectorFlags&) = delete;
  CollectorFlags& operator=(const CollectorFlags&) = delete;

  // Switches config->collectors[name] for every flag given on the command line.
  void ApplyTo(Config* config) const;

 private:
  std::map<std::string, CLI::Option*> flags_;
  std::map<std::string, bool> values_;  // the flags' targets: stable node addresses
};

}  // namespace stagewatch
