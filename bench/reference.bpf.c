/* Reference programs for bench/bpf_cost.sh: what the agent's probes are measured against.
 * Each one is attached alone by bench/load_reference.cc. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, __u64);
} ref_counts SEC(".maps");

/* The floor: the cost of running any program at all on sched_switch. */
SEC("raw_tp/sched_switch")
int BPF_PROG(ref_empty_switch)
{
	return 0;
}

/* The least a per-cgroup count can cost: one per-CPU hash increment keyed by the current
 * task's cgroup id. */
SEC("raw_tp/sched_switch")
int BPF_PROG(ref_hash_switch)
{
	__u64 cgroup = bpf_get_current_cgroup_id();
	__u64 *n = bpf_map_lookup_elem(&ref_counts, &cgroup);

	if (n) {
		(*n)++;
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&ref_counts, &cgroup, &one, BPF_NOEXIST);
	}
	return 0;
}

/* The floor on the page-fault hook. */
SEC("raw_tp/page_fault_user")
int BPF_PROG(ref_empty_fault)
{
	return 0;
}

/* The floor on the migration hook. */
SEC("raw_tp/sched_migrate_task")
int BPF_PROG(ref_empty_migrate)
{
	return 0;
}
