/* CPU contention per cgroup, aggregated in the kernel: context switches, run-queue latency,
 * on-CPU time and who preempts whom. Nothing crosses to user space per event. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bits.bpf.h"
#include "cgroup_id.bpf.h"
#include "sched.h"

#define TASK_RUNNING 0
#define E2BIG 7
#define SCHED_NORMAL 0
#define SCHED_BATCH 3
#define SCHED_IDLE 5

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 runq_source = SCHED_RUNQ_SCHED_INFO;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SCHED_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct sched_cgroup_stats);
} sched_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SCHED_MAX_PAIRS);
	__type(key, struct sched_pair);
	__type(value, __u64);
} sched_preemptions SEC(".maps");

/* The cgroup of the task on each CPU right now (0 when idle): tasks running per stage. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sched_cpu_cgroup SEC(".maps");

/* Fallback only: when each pid became runnable (see runq_source). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} sched_enqueued_at SEC(".maps");

/* Updates refused because a map was full. */
__u64 sched_stats_overflows = 0;
__u64 sched_pairs_overflows = 0;

static struct sched_cgroup_stats zero_stats;

static __always_inline struct sched_cgroup_stats *stats_of(__u64 cgroup)
{
	struct sched_cgroup_stats *s = bpf_map_lookup_elem(&sched_stats, &cgroup);

	if (s)
		return s;
	if (bpf_map_update_elem(&sched_stats, &cgroup, &zero_stats, BPF_NOEXIST) == -E2BIG) {
		__sync_fetch_and_add(&sched_stats_overflows, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&sched_stats, &cgroup);
}

/* The run-queue clock of the CPU the task is on: the clock sched_info stamps with. Reached
 * through the task, since the per-CPU `runqueues` symbol is not always in kallsyms. */
static __always_inline __u64 task_rq_clock(struct task_struct *t)
{
	/* cfs_rq->rq exists only with CONFIG_FAIR_GROUP_SCHED; user space then picks the
	 * wakeup-hook source, which does not need this clock to match sched_info's. */
	if (!bpf_core_field_exists(((struct cfs_rq *)0)->rq))
		return bpf_ktime_get_ns();
	return BPF_CORE_READ(t, se.cfs_rq, rq, clock);
}

/* Time prev just spent on the CPU. Fair-class tasks: the slice's exec runtime, the clock
 * cpuacct charges (set_next_entity() saves prev_sum_exec_runtime when the task is picked).
 * Others: run-queue clock since sched_info stamped its arrival. */
static __always_inline __u64 oncpu_ns(struct task_struct *prev, __u64 now)
{
	int policy = BPF_CORE_READ(prev, policy);

	if (policy == SCHED_NORMAL || policy == SCHED_BATCH || policy == SCHED_IDLE)
		return BPF_CORE_READ(prev, se.sum_exec_runtime) -
		       BPF_CORE_READ(prev, se.prev_sum_exec_runtime);
	if (!bpf_core_field_exists(prev->sched_info))
		return 0;
	__u64 arrived = BPF_CORE_READ(prev, sched_info.last_arrival);
	return arrived && now > arrived ? now - arrived : 0;
}

/* How long next waited on the run queue. */
static __always_inline __u64 runq_wait_ns(struct task_struct *next, __u64 now)
{
	__u64 queued;

	if (runq_source == SCHED_RUNQ_SCHED_INFO && bpf_core_field_exists(next->sched_info)) {
		/* Still set here: sched_info_arrive() clears it after this tracepoint
		 * (kernel/sched/core.c: __schedule() → context_switch() → prepare_task_switch()). */
		queued = BPF_CORE_READ(next, sched_info.last_queued);
		return queued && now > queued ? now - queued : 0;
	}
	__u32 pid = BPF_CORE_READ(next, pid);
	__u64 *at = bpf_map_lookup_elem(&sched_enqueued_at, &pid);
	if (!at)
		return 0;
	queued = *at;
	bpf_map_delete_elem(&sched_enqueued_at, &pid);
	now = bpf_ktime_get_ns();
	return now > queued ? now - queued : 0;
}

static __always_inline void on_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_pid = BPF_CORE_READ(prev, pid);
	__u32 next_pid = BPF_CORE_READ(next, pid);
	__u64 now = task_rq_clock(prev);
	__u64 prev_cg = task_cgroup_id(prev);
	__u64 next_cg = task_cgroup_id(next);
	/* nivcsw when preempted, or switched out while still TASK_RUNNING (yield). */
	bool runnable = preempt || prev_state == TASK_RUNNING;
	struct sched_cgroup_stats *s;
	__u32 zero = 0;
	__u64 *on_cpu = bpf_map_lookup_elem(&sched_cpu_cgroup, &zero);

	if (on_cpu)
		*on_cpu = next_pid ? next_cg : 0;
	if (prev_pid) {
		s = stats_of(prev_cg);
		if (s) {
			if (runnable)
				s->nonvoluntary_switches++;
			else
				s->voluntary_switches++;
			s->oncpu_ns += oncpu_ns(prev, now);
		}
		if (runnable && runq_source == SCHED_RUNQ_WAKEUP_HOOK) {
			__u64 ts = bpf_ktime_get_ns();
			bpf_map_update_elem(&sched_enqueued_at, &prev_pid, &ts, BPF_ANY);
		}
	}
	if (!next_pid)
		return;
	s = stats_of(next_cg);
	if (s)
		hist_add(&s->runq_latency, runq_wait_ns(next, now));
	if (prev_pid && runnable && prev_cg != next_cg) {
		struct sched_pair pair = {.preempted = prev_cg, .preempting = next_cg};
		__u64 *n = bpf_map_lookup_elem(&sched_preemptions, &pair);

		if (n) {
			(*n)++;
		} else {
			__u64 one = 1;
			if (bpf_map_update_elem(&sched_preemptions, &pair, &one, BPF_NOEXIST) == -E2BIG)
				__sync_fetch_and_add(&sched_pairs_overflows, 1);
		}
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit_raw, struct task_struct *p)
{
	struct sched_cgroup_stats *s;

	if (BPF_CORE_READ(p, pid) != BPF_CORE_READ(p, tgid))
		return 0;
	s = stats_of(task_cgroup_id(p));
	if (s)
		s->exited_processes++;
	return 0;
}

/* Fallback run-queue timestamps (runq_source == SCHED_RUNQ_WAKEUP_HOOK). */
static __always_inline void on_wakeup(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);
	__u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&sched_enqueued_at, &pid, &ts, BPF_ANY);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	on_wakeup(p);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	on_wakeup(p);
	return 0;
}
