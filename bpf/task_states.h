/* One record per user thread, written by the task iterator of bpf/task_states.bpf.c and
 * summed by agent/probes/task_states_probe.cc. Shared by BPF and C++. */
#ifndef STAGEWATCH_TASK_STATES_H
#define STAGEWATCH_TASK_STATES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct task_state_record {
	__u64 cgroup_id;  /* the thread's cgroup in the keyed hierarchy (bpf/cgroup_key.h) */
	__u32 state;      /* task->__state, raw: user space reads it as /proc/<tid>/stat does */
	__u32 exit_state; /* task->exit_state (EXIT_ZOMBIE, EXIT_DEAD) */
};

#endif
