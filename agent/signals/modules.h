// One function per signal module, each in its own <name>_signal.cc; registry.cc lists them.
#pragma once

#include "signals/signal.h"

namespace stagewatch {

Signal LifecycleSignal();
Signal OomSignal();
Signal SchedSignal();
Signal MemorySignal();
Signal RunsSignal();

}  // namespace stagewatch
