#include "signals/signal.h"

namespace stagewatch {

RunningSignals::RunningSignals() = default;
RunningSignals::~RunningSignals() { Stop(); }

void RunningSignals::Stop() {
  // What reads the others goes first: the runs signal (started last), each tracker before its
  // probe (made after it). A probe's destructor detaches its BPF programs.
  found_.clear();
  while (!parts_.empty()) parts_.pop_back();
}

}  // namespace stagewatch
