/* Cgroup lifecycle: one ring-buffer event per cgroup made or removed in the hierarchy the
 * agent keys on, so user space names a cgroup before anything can happen in it; and, where the
 * kernel has the tracepoint, one per cgroup that got its first task or lost its last, so user
 * space knows the moment a run's last task exited. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lifecycle.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the agent before load: the hierarchy whose ids the other probes use. Events of the
 * other hierarchies (a hybrid host mirrors every cgroup into each) are not sent. */
const volatile __u32 target_hierarchy_id = 0;

/* Records are as long as their path (about 130 bytes), so this holds some 2,000 events. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} cgroup_events SEC(".maps");

/* Where an event is built before its used length is copied out: too big for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cgroup_event);
} cgroup_scratch SEC(".maps");

/* Events that found the ring buffer full; user space walks the hierarchy when it grows. */
__u64 cgroup_events_lost = 0;

/* What the run ledger needs of a removed cgroup's memcg, whose files are gone by the time user
 * space hears of the rmdir. The css is only cleared from cgrp->subsys[] once it is offlined,
 * after this tracepoint; a cgroup without a memcg of its own (a v2 one whose parent does not
 * enable the controller) points at none or at another cgroup's, and gets zeros. */
static __always_inline void read_memcg(struct cgroup *cgrp, struct cgroup_event *e)
{
	struct cgroup_subsys_state *css;
	struct mem_cgroup *memcg;
	int memory_subsys;

	e->memory_peak_pages = 0;
	e->memory_max_pages = 0;
	e->memory_failcnt = 0;
	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id) ||
	    !bpf_core_field_exists(struct page_counter, watermark))
		return;
	memory_subsys = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	if (memory_subsys < 0 || memory_subsys >= CGROUP_SUBSYS_COUNT)
		return;
	css = BPF_CORE_READ(cgrp, subsys[memory_subsys]);
	if (!css || BPF_CORE_READ(css, cgroup) != cgrp)
		return;
	memcg = (void *)css - bpf_core_field_offset(struct mem_cgroup, css);
	e->memory_peak_pages = BPF_CORE_READ(memcg, memory.watermark);
	e->memory_max_pages = BPF_CORE_READ(memcg, memory.max);
	e->memory_failcnt = BPF_CORE_READ(memcg, memory.failcnt);
}

static __always_inline int send(struct cgroup *cgrp, const char *path, __u16 kind)
{
	struct cgroup_event *e;
	__u32 zero = 0, used;
	long len;

	if (BPF_CORE_READ(cgrp, root, hierarchy_id) != target_hierarchy_id)
		return 0;
	e = bpf_map_lookup_elem(&cgroup_scratch, &zero);
	if (!e)
		return 0;
	e->cgroup_id = BPF_CORE_READ(cgrp, kn, id);
	e->hierarchy_id = target_hierarchy_id;
	e->kind = kind;
	e->at_ns = bpf_ktime_get_ns();
	if (kind == CGROUP_EVENT_RMDIR)
		read_memcg(cgrp, e);
	else
		e->memory_peak_pages = e->memory_max_pages = e->memory_failcnt = 0;
	len = bpf_probe_read_kernel_str(e->path, sizeof(e->path), path);
	if (len < 1) {
		e->path[0] = 0;
		len = 1;
	}
	used = len;
	if (used > CGROUP_PATH_LEN)
		used = CGROUP_PATH_LEN;
	e->path_len = used - 1;
	/* The path with its NUL, not the whole buffer. */
	if (bpf_ringbuf_output(&cgroup_events, e, offsetof(struct cgroup_event, path) + used, 0))
		__sync_fetch_and_add(&cgroup_events_lost, 1);
	return 0;
}

SEC("raw_tp/cgroup_mkdir")
int BPF_PROG(cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, path, CGROUP_EVENT_MKDIR);
}

SEC("raw_tp/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, path, CGROUP_EVENT_RMDIR);
}

/* kernel/cgroup/cgroup.c cgroup_update_populated(): fired for the cgroup whose own or
 * descendants' tasks went from none to some or back, and again for each ancestor that flips
 * with it, in v1 and v2 hierarchies alike. Rare: twice in a cgroup's life, as mkdir/rmdir. */
SEC("raw_tp/cgroup_notify_populated")
int BPF_PROG(cgroup_populated, struct cgroup *cgrp, const char *path, int val)
{
	return send(cgrp, path, val ? CGROUP_EVENT_POPULATED : CGROUP_EVENT_UNPOPULATED);
}
