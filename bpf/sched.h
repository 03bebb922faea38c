/* CPU contention per cgroup: the layout shared by bpf/sched.bpf.c and the agent
 * (agent/signals/sched/sched_probe.cc). Fixed-width fields only. */
#ifndef STAGEWATCH_SCHED_H
#define STAGEWATCH_SCHED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "histogram.h"

/* 10,000 live cgroups and the dead of a churn until the sched tracker forgets them (its next
 * collect, 2.5 s: 2,400 cgroups a second here). */
#define SCHED_MAX_CGROUPS 16384
#define SCHED_MAX_PAIRS 16384

/* Per cgroup, per CPU: a slot of a BPF_MAP_TYPE_PERCPU_ARRAY, the slot chosen per cgroup id in
 * a hash the switch program reads only when a task's cgroup changes (see sched.bpf.c). */
struct sched_cgroup_stats {
	__u64 cgroup; /* whose slot this CPU's copy counts for; 0 when it counts for no one yet */
	__u64 voluntary_switches;    /* the task blocked */
	__u64 nonvoluntary_switches; /* the task was still runnable: preempted or yielded */
	__u64 oncpu_ns;
	__u64 exited_processes; /* thread-group leaders that exited */
	struct log2_hist runq_latency; /* wait between becoming runnable and getting the CPU */
	/* Of runq_latency's sum, the part the task's CPU group was throttled (CFS bandwidth):
	 * only where the kernel keeps cfs_rq->throttled_clock_self (Linux 6.6), else 0. */
	__u64 runq_throttled_ns;
	/* Of runq_latency, new tasks' first waits (from fork to their first slice, born after the
	 * probe loaded): a fork storm's start-up apart from waits behind running work. */
	__u64 first_waits;
	__u64 first_wait_ns;
};

/* Key of the preemption matrix: a task of `preempted` was switched out while runnable and a
 * task of `preempting` got the CPU. */
struct sched_pair {
	__u64 preempted;
	__u64 preempting;
};

/* Which clock the run-queue wait is read from; set by user space before load. */
enum sched_runq_source {
	SCHED_RUNQ_SCHED_INFO = 0, /* task->sched_info.last_queued (CONFIG_SCHED_INFO) */
	SCHED_RUNQ_WAKEUP_HOOK = 1, /* sched_wakeup + a pid-keyed timestamp map */
};

#endif
