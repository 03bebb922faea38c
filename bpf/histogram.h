/* In-kernel log2 histograms, shared by BPF and C++ (exporters turn them into classic
 * Prometheus histograms). Slot i counts values v with 2^(i-1) < v/unit <= 2^i (slot 0: v <= unit),
 * so the slot's upper edge is exactly le = 2^i * unit; larger values go to `above`. */
#ifndef STAGEWATCH_HISTOGRAM_H
#define STAGEWATCH_HISTOGRAM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Durations are histogrammed in units of 2^10 ns (1.024 us): 26 slots reach 2^35 ns, 34 s. */
#define HIST_UNIT_SHIFT 10
#define HIST_SLOTS 26

struct log2_hist {
	__u64 slots[HIST_SLOTS];
	__u64 above; /* beyond the last slot's edge: only in +Inf */
	__u64 sum;   /* in ns */
};

#endif
