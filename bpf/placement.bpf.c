/* CPU migrations per cgroup, split by whether the task stayed on its NUMA node, aggregated in
 * the kernel. Nothing crosses to user space per event.
 *
 * sched_migrate_task is raised by set_task_cpu() before the move, for every call: the source
 * CPU is still task_cpu(p), and a call that keeps the task where it is (source == destination)
 * is no migration (the kernel's own p->se.nr_migrations counts only the others). The task is
 * `p`, not current: the CPU that moves it is its waker's or a load balancer's. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgroup_id.bpf.h"
#include "core_fixes.bpf.h"
#include "placement.h"

#define E2BIG 7

char LICENSE[] SEC("license") = "GPL";

/* CPU → its NUMA node, filled by user space before attach (/sys/devices/system/node). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PLACEMENT_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} placement_cpu_node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, PLACEMENT_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct placement_cgroup_stats);
} placement_stats SEC(".maps");

/* Updates refused because placement_stats was full. */
__u64 placement_stats_overflows = 0;

static struct placement_cgroup_stats zero_stats;

static __always_inline __u32 node_of(__u32 cpu)
{
	__u32 *node = bpf_map_lookup_elem(&placement_cpu_node, &cpu);

	return node ? *node : 0;
}

static __always_inline void count_migration(__u64 cgroup, __u32 from, __u32 to)
{
	struct placement_cgroup_stats *s = bpf_map_lookup_elem(&placement_stats, &cgroup);

	if (!s) {
		if (bpf_map_update_elem(&placement_stats, &cgroup, &zero_stats, BPF_NOEXIST) ==
		    -E2BIG) {
			__sync_fetch_and_add(&placement_stats_overflows, 1);
			return;
		}
		s = bpf_map_lookup_elem(&placement_stats, &cgroup);
		if (!s)
			return;
	}
	if (node_of(from) == node_of(to))
		s->node_migrations++;
	else
		s->cross_node_migrations++;
}

/* tp_btf: `p` is a trusted pointer, read with plain loads. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(placement_migrate_btf, struct task_struct *p, int dest_cpu)
{
	__u32 from = btf_task_cpu(p);

	if (from != (__u32)dest_cpu)
		count_migration(btf_task_cgroup_id(p), from, dest_cpu);
	return 0;
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(placement_migrate_raw, struct task_struct *p, int dest_cpu)
{
	__u32 from = task_cpu_of(p);

	if (from != (__u32)dest_cpu)
		count_migration(task_cgroup_id(p), from, dest_cpu);
	return 0;
}
