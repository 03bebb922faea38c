/* OOM kill events: the layout shared by bpf/oom.bpf.c and the agent (agent/signals/oom/oom_probe.cc).
 * Fixed-width fields only; the C++ side checks size and offsets with static_assert. */
#ifndef STAGEWATCH_OOM_H
#define STAGEWATCH_OOM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OOM_COMM_LEN 16
#define OOM_MAX_KILLER_COMMS 16
#define OOM_MAX_KILLER_EXES 64

/* A killer's executable, as the kernel names it: the inode and its superblock's device
 * (kernel encoding, major << 20 | minor). User space fills it from stat(2). */
struct oom_killer_exe {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

enum oom_event_kind {
	OOM_KIND_KERNEL = 0,    /* the kernel's OOM killer chose the victim (oom:mark_victim) */
	OOM_KIND_USERSPACE = 1, /* a configured user-space killer sent SIGKILL */
};

enum oom_event_flags {
	/* The classic tracepoint gives only a pid: user space looks up the victim's cgroup. */
	OOM_FLAG_VICTIM_CGROUP_UNKNOWN = 1,
	/* Memory figures are unavailable (classic tracepoint of an older kernel). */
	OOM_FLAG_NO_MEMORY_FIGURES = 2,
};

struct oom_event {
	__u64 timestamp_ns;      /* bpf_ktime_get_ns() */
	__u64 victim_cgroup_id;  /* in the keyed hierarchy (cgroup_key.h); 0 if unknown */
	__u64 trigger_cgroup_id; /* the task that hit the OOM, or sent the kill */
	__u64 total_vm_pages;
	__u64 anon_rss_pages;
	__u64 file_rss_pages;
	__u64 shmem_rss_pages;
	__s32 victim_pid; /* thread group id */
	__s32 trigger_pid;
	__s32 oom_score_adj;
	__u16 kind;  /* enum oom_event_kind */
	__u16 flags; /* enum oom_event_flags */
	char victim_comm[OOM_COMM_LEN];
	char trigger_comm[OOM_COMM_LEN];
};

#endif
