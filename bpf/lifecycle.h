/* Cgroup lifecycle events: the layout shared by bpf/lifecycle.bpf.c and the agent
 * (agent/signals/lifecycle/lifecycle_probe.cc). Fixed-width fields only; the C++ side checks the layout. */
#ifndef STAGEWATCH_CGROUP_H
#define STAGEWATCH_CGROUP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The tracepoints format the path into a buffer of this size (TRACE_CGROUP_PATH_LEN,
 * include/trace/events/cgroup.h), so a path never needs more. */
#define CGROUP_PATH_LEN 1024

enum cgroup_event_kind {
	CGROUP_EVENT_MKDIR = 0,
	CGROUP_EVENT_RMDIR = 1,
	/* The cgroup (with its descendants) got its first task, or lost its last one: sent once
	 * per flip of each cgroup whose state flips (an ancestor flips with its last child). */
	CGROUP_EVENT_POPULATED = 2,
	CGROUP_EVENT_UNPOPULATED = 3,
};

struct cgroup_event {
	__u64 cgroup_id;    /* kernfs node id: the directory's inode number */
	__u32 hierarchy_id; /* cgrp->root->hierarchy_id; 0 is the cgroup v2 hierarchy */
	__u16 kind;         /* enum cgroup_event_kind */
	__u16 path_len;     /* bytes of path, without the NUL; CGROUP_PATH_LEN - 1 may be cut */
	/* rmdir only, from the cgroup's own memcg as the kernel still holds it (0: no memcg of
	 * its own, or the kernel lacks the field): the exact peak (v1 max_usage_in_bytes, v2
	 * memory.peak), the limit (memory.limit_in_bytes / memory.max) and failcnt. In pages. */
	__u64 memory_peak_pages;
	__u64 memory_max_pages;
	__u64 memory_failcnt;
	__u64 at_ns; /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) when the kernel made the event */
	/* Relative to the hierarchy root. A ring-buffer record ends after the path's NUL. */
	char path[CGROUP_PATH_LEN];
};

#endif
