// Sums the per-CPU copies of an in-kernel log2 histogram (bpf/histogram.h).
#pragma once

#include "bpf/histogram.h"

namespace stagewatch {

inline void AddHistogram(log2_hist& sum, const log2_hist& cpu) {
  for (int i = 0; i < HIST_SLOTS; i++) sum.slots[i] += cpu.slots[i];
  sum.above += cpu.above;
  sum.sum += cpu.sum;
}

}  // namespace stagewatch
