/* Where each cgroup's tasks run: the layout shared by bpf/placement.bpf.c and the agent
 * (agent/signals/placement/placement_probe.cc). Fixed-width fields only. */
#ifndef STAGEWATCH_PLACEMENT_H
#define STAGEWATCH_PLACEMENT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Cgroups whose tasks migrated, until the placement tracker forgets the dead ones (as the
 * sched probe's slots, bpf/sched.h). */
#define PLACEMENT_MAX_CGROUPS 16384
/* CPUs the CPU → node map holds; a CPU at or beyond it counts on node 0. */
#define PLACEMENT_MAX_CPUS 4096

/* Per cgroup, per CPU (the CPU that moved the task): a value of a BPF_MAP_TYPE_PERCPU_HASH
 * keyed by cgroup id. */
struct placement_cgroup_stats {
	__u64 node_migrations;       /* to another CPU of the same NUMA node */
	__u64 cross_node_migrations; /* to a CPU of another node */
};

#endif
