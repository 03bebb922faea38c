#include "signals/modules.h"
#include "signals/signal.h"

namespace stagewatch {

// Adding a signal: write its <name>_signal.cc, declare it in modules.h, list it here.
const std::vector<Signal>& Signals() {
  static const std::vector<Signal> kSignals = {OomSignal(), SchedSignal(), MemorySignal(),
                                               CgroupSignal(), RunsSignal()};
  return kSignals;
}

std::vector<std::string> CollectorFlagNames() {
  std::vector<std::string> names;
  for (const Signal& s : Signals()) {
    if (s.collector_flag) names.emplace_back(s.name);
  }
  return names;
}

}  // namespace stagewatch
