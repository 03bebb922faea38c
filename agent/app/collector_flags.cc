#include "app/collector_flags.h"

#include "signals/signal.h"

namespace stagewatch {

CollectorFlags::CollectorFlags(CLI::App& app) {
  for (const std::string& name : CollectorFlagNames()) {
    values_[name] = true;  // every collector is on unless switched off
    flags_[name] = app.add_flag("--collector." + name + ",!--no-collector." + name, values_[name],
                                "Enable the " + name + " collector (--no-collector." + name +
                                    " disables it)");
  }
}

void CollectorFlags::ApplyTo(Config* config) const {
  for (const auto& [name, flag] : flags_) {
    if (flag->count() > 0) config->collectors[name] = values_.at(name);
  }
}

}  // namespace stagewatch
