/* Memory pressure per cgroup: the layout shared by bpf/memory.bpf.c and the agent
 * (agent/signals/memory/memory_probe.cc). Fixed-width fields only; the C++ side checks size and
 * offsets with static_assert. */
#ifndef STAGEWATCH_MEMORY_H
#define STAGEWATCH_MEMORY_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "histogram.h"

#define MEMORY_MAX_CGROUPS 10240
/* Tasks inside reclaim at once; each holds one entry between begin and end. */
#define MEMORY_MAX_RECLAIMERS 8192

/* Per cgroup, per CPU (BPF_MAP_TYPE_PERCPU_HASH keyed by cgroup id). */
struct memory_cgroup_stats {
	/* The kernel's minor/major split (mm_account_fault() in mm/memory.c): the counts behind
	 * getrusage ru_minflt/ru_majflt. With the exception tracepoints as the source, minor_faults
	 * holds every fault exception and user space subtracts major_faults (see memory.bpf.c). */
	__u64 minor_faults;
	__u64 major_faults;
	__u64 reclaim_stalls;           /* direct and memcg reclaim passes that ended */
	struct log2_hist reclaim_stall; /* time each pass held up its task */
};

#endif
