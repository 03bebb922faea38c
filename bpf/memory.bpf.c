/* Memory pressure per cgroup, aggregated in the kernel: page faults (minor, major) and the
 * time tasks stall in direct or memcg reclaim. Nothing crosses to user space per event. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bits.bpf.h"
#include "cgroup_id.bpf.h"
#include "memory.h"

#define E2BIG 7

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MEMORY_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct memory_cgroup_stats);
} memory_stats SEC(".maps");

/* Thread id → when its reclaim pass began (bpf_ktime_get_ns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MEMORY_MAX_RECLAIMERS);
	__type(key, __u32);
	__type(value, __u64);
} memory_reclaim_start SEC(".maps");

/* Updates refused because a map was full. */
__u64 memory_stats_overflows = 0;
/* Every major fault counted, of any cgroup: while it stands still, no stage's major faults
 * moved, and the agent's once-a-second feed of the fault-storm detector reads no map. */
__u64 memory_major_faults_seen = 0;
__u64 memory_reclaim_overflows = 0;

static struct memory_cgroup_stats zero_stats;

/* Set by user space when bpf_get_current_task_btf() is there (Linux 5.11). */
const volatile bool btf_current = false;

/* task_cgroup_id(current), cheaper: page faults are hot. The v2 id has its own helper; the v1
 * id is read with plain loads from the BTF-typed current task, where task_cgroup_id() needs a
 * bpf_probe_read_kernel() call per pointer. */
static __always_inline __u64 current_cgroup_id(void)
{
	if (cgroup_key != CGROUP_KEY_V1_MEMORY)
		return bpf_get_current_cgroup_id();
	if (btf_current)
		return btf_task_cgroup_id(bpf_get_current_task_btf());
	return task_cgroup_id((struct task_struct *)bpf_get_current_task());
}

static __always_inline struct memory_cgroup_stats *current_stats(void)
{
	__u64 cgroup = current_cgroup_id();
	struct memory_cgroup_stats *s = bpf_map_lookup_elem(&memory_stats, &cgroup);

	if (s)
		return s;
	if (bpf_map_update_elem(&memory_stats, &cgroup, &zero_stats, BPF_NOEXIST) == -E2BIG) {
		__sync_fetch_and_add(&memory_stats_overflows, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&memory_stats, &cgroup);
}

/* ---- page faults --------------------------------------------------------------------------
 * The perf software events are raised by mm_account_fault() (mm/memory.c) with the same
 * minor/major decision that feeds current->min_flt/maj_flt (getrusage) and memcg PGFAULT /
 * PGMAJFAULT, so they agree by construction. Each CPU has one event with sample_period 1:
 * perf_swevent_event() then overflows on every fault with throttling off, so none is lost to
 * sample throttling (kernel/events/core.c: perf_swevent_overflow()). The faulting task is
 * current. Faults taken for get_user_pages() (MAP_POPULATE, mlock) pass no regs and raise no
 * event: memory.stat and getrusage count those, this does not.
 *
 * Measured on the development VM (Linux 6.18, 2 vCPUs, about 12 us per anonymous fault) with
 * pinned fault storms, as CPU time with the probe over CPU time without (bench/README.md):
 *   perf events MIN + MAJ                 1.017 to 1.027    +210 to 330 ns a fault
 *   exceptions:page_fault_* + perf MAJ    1.011 to 1.021    +170 to 260 ns a fault
 * Most of it is the program (bpf_stats): the per-CPU hash lookup, then the cgroup id, which
 * plain BTF loads make half as costly as bpf_probe_read_kernel() calls. Both sources counted
 * exactly memory.stat's pgfault for 16384 touched pages. The exception tracepoints are the
 * default where they exist (agent/signals/memory/memory_probe.cc): a perf software event that
 * overflows into a program on every fault costs 40-70 ns more than a raw tracepoint, outside
 * the program where bpf_stats cannot see it, and faults now cost 1-2 us here, so that is
 * 2-5% of a fault. What they count differently is rare: a fault on a bad address (SIGSEGV)
 * or a kernel address is an exception but no fault in getrusage. The perf events remain
 * where the exception tracepoints are missing (they are x86 only). */

SEC("perf_event")
int memory_minor_fault(struct bpf_perf_event_data *ctx)
{
	struct memory_cgroup_stats *s = current_stats();

	if (s)
		s->minor_faults++;
	return 0;
}

SEC("perf_event")
int memory_major_fault(struct bpf_perf_event_data *ctx)
{
	struct memory_cgroup_stats *s = current_stats();

	if (s)
		s->major_faults++;
	__sync_fetch_and_add(&memory_major_faults_seen, 1);
	return 0;
}

/* The exception source: minor_faults counts every #PF exception (arch/x86/mm/fault.c:
 * trace_page_fault_entries()), minor and major alike, and user space subtracts the major
 * ones, which the perf event still counts. */
static __always_inline void on_fault_exception(void)
{
	struct memory_cgroup_stats *s = current_stats();

	if (s)
		s->minor_faults++;
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(memory_fault_user)
{
	on_fault_exception();
	return 0;
}

SEC("raw_tp/page_fault_kernel")
int BPF_PROG(memory_fault_kernel)
{
	on_fault_exception();
	return 0;
}

/* ---- reclaim stalls -----------------------------------------------------------------------
 * Direct reclaim (try_to_free_pages()) and memcg limit reclaim (try_to_free_mem_cgroup_pages(),
 * both in mm/vmscan.c) run in the allocating task and do not nest, so one start per thread. The
 * stall is charged to the task's own cgroup, whose allocation it held up. */

static __always_inline void on_reclaim_begin(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&memory_reclaim_start, &tid, &now, BPF_ANY) == -E2BIG)
		__sync_fetch_and_add(&memory_reclaim_overflows, 1);
}

static __always_inline void on_reclaim_end(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&memory_reclaim_start, &tid);
	struct memory_cgroup_stats *s;
	__u64 began;

	if (!start)
		return; /* began before the probe attached */
	began = *start;
	bpf_map_delete_elem(&memory_reclaim_start, &tid);
	s = current_stats();
	if (!s)
		return;
	s->reclaim_stalls++;
	hist_add(&s->reclaim_stall, bpf_ktime_get_ns() - began);
}

SEC("raw_tp/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(memory_direct_reclaim_begin)
{
	on_reclaim_begin();
	return 0;
}

SEC("raw_tp/mm_vmscan_direct_reclaim_end")
int BPF_PROG(memory_direct_reclaim_end)
{
	on_reclaim_end();
	return 0;
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memory_memcg_reclaim_begin)
{
	on_reclaim_begin();
	return 0;
}

SEC("raw_tp/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memory_memcg_reclaim_end)
{
	on_reclaim_end();
	return 0;
}
