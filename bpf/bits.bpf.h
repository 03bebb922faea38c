/* Bit helpers for BPF programs. */
#ifndef STAGEWATCH_BITS_BPF_H
#define STAGEWATCH_BITS_BPF_H

#include "histogram.h"

/* floor(log2(v)) for v > 0. */
static __always_inline __u32 log2_floor(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* The smallest i with v <= 2^i: rounding up keeps every value at or below its bucket's le. */
static __always_inline __u32 log2_ceil(__u64 v)
{
	return v <= 1 ? 0 : log2_floor(v - 1) + 1;
}

/* Adds a duration in ns to a histogram (see histogram.h). Not atomic: callers keep per-CPU
 * copies. */
static __always_inline void hist_add(struct log2_hist *h, __u64 ns)
{
	__u32 slot = log2_ceil(ns);

	slot = slot > HIST_UNIT_SHIFT ? slot - HIST_UNIT_SHIFT : 0;
	if (slot < HIST_SLOTS)
		h->slots[slot]++;
	else
		h->above++;
	h->sum += ns;
}

#endif
