/* CPU contention per cgroup, aggregated in the kernel: context switches, run-queue latency,
 * on-CPU time and who preempts whom. Nothing crosses to user space per event.
 *
 * Cheap by construction (docs/architecture.md, "BPF cost"): at sched_switch the task switching
 * out is current, so everything is read from bpf_get_current_task_btf() with plain loads, and
 * everything is charged to current's cgroup in the array slot its task storage keeps (one
 * helper call; the cgroup's id and slot are looked up again only when the task changes
 * cgroup). What belongs to the task switching in is counted when it switches out in turn:
 *   - its run-queue wait is the growth of task->sched_info.run_delay (the scheduler's own
 *     sum of waits, as /proc/<pid>/schedstat shows it) since its last switch-out, kept in
 *     task-local storage;
 *   - the part of that wait its CPU group was throttled is the growth of the throttled time
 *     of the group's cfs_rq it waited on over the same span (see throttled_part);
 *   - "who preempted whom" is carried in a per-CPU slot from the switch where a task was
 *     switched out while runnable to the next switch on that CPU, whose current is the task
 *     that took the CPU;
 *   - which cgroup runs on each CPU right now is read on demand (sched_running_now).
 * So a slice, its wait and a preemption by it are charged to the cgroup the task is in when the
 * slice ends; that differs from where it began only for a task moved during the slice. */
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
/* CLOCK_MONOTONIC when user space loaded the probe. A task started later (task->start_time,
 * same clock) has had all of its run_delay and CPU time in view; for an older one, the
 * first switch-out seen only records where its counters stand. */
const volatile __u64 loaded_at_ns = 0;

/* Per cgroup, per CPU: its counts, in the slot sched_slots gives it. An array slot is found in
 * a few instructions where a hash lookup hashes the key and walks a bucket (about 30 ns a
 * switch, bench/README.md), and a task keeps its cgroup's slot in its storage: the hash is read
 * only when the task changes cgroup. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCHED_MAX_CGROUPS);
	__type(key, __u32);
	__type(value, struct sched_cgroup_stats);
} sched_stats SEC(".maps");

/* Per CPU: 1 + the highest slot of sched_stats counted there; user space reads below it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sched_slots_seen SEC(".maps");

/* Cgroup id → its slot in sched_stats. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SCHED_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, __u32);
} sched_slots SEC(".maps");

/* The free slots: user space pushes every slot at start, lowest on top, and a forgotten
 * cgroup's slot once it has zeroed it (SchedProbe::Forget). Last in, first out: the slots in
 * use stay at the bottom of the array, where user space reads. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, SCHED_MAX_CGROUPS);
	__type(value, __u32);
} sched_free_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SCHED_MAX_PAIRS);
	__type(key, struct sched_pair);
	__type(value, __u64);
} sched_preemptions SEC(".maps");

/* The cgroup of the task on each CPU (0 when idle), written by sched_running_now when user
 * space runs it on that CPU: tasks running per stage. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sched_cpu_cgroup SEC(".maps");

/* Per task: where its counters stood when it last switched out. */
struct task_seen {
	__u64 run_delay; /* sched_info.run_delay */
	__u64 exec_ns;   /* se.sum_exec_runtime */
	__u64 seen;
	__u64 css_set;   /* task->cgroups when `cgroup` was read through it */
	__u64 cgroup;
	__u64 cfs_rq;    /* task->se.cfs_rq at the switch-out: where it waits next */
	__u64 throttled; /* that cfs_rq's throttled time then (throttled_so_far) */
	__u32 slot;      /* `cgroup`'s slot in sched_stats, as last found */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_seen);
} sched_task_seen SEC(".maps");

/* Per CPU, from one switch to the next on the same CPU (whose current is this one's next). */
struct cpu_carry {
	__u64 preempted; /* cgroup of a task switched out while runnable; 0 if none or idle */
	__u64 wait_ns;   /* wakeup-hook source only: the wait of the task switched in */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_carry);
} sched_cpu_carry SEC(".maps");

/* Wakeup-hook source only: when each pid became runnable (see runq_source). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} sched_enqueued_at SEC(".maps");

/* Slots given to cgroups so far (user space counts those it frees): how full the array is,
 * for a tracker that must forget the dead before a churn takes the rest. */
__u64 sched_slots_given = 0;
/* Updates refused because a map was full. */
__u64 sched_stats_overflows = 0;
__u64 sched_pairs_overflows = 0;

/* Per slot of sched_stats: 1 once it counted since user space last took the marks, so that a
 * collection reads the slots that moved, not all 16,384 (at 10,000 cgroups nearly all sleep).
 * A byte each, set only when clear: a plain store on a line that is read far more often than
 * written, with no atomic instruction (user space takes a word of marks at a time). */
__u8 sched_moved[SCHED_MAX_CGROUPS] __attribute__((aligned(8))) = {};

static __always_inline void mark_moved(__u32 slot)
{
	if (slot < SCHED_MAX_CGROUPS && !sched_moved[slot])
		sched_moved[slot] = 1;
}

/* The slot of `cgroup`, a free one given to it the first time. */
static __always_inline __u32 *slot_of(__u64 cgroup)
{
	__u32 *slot = bpf_map_lookup_elem(&sched_slots, &cgroup);
	__u32 fresh;

	if (slot)
		return slot;
	if (bpf_map_pop_elem(&sched_free_slots, &fresh) != 0) {
		__sync_fetch_and_add(&sched_stats_overflows, 1);
		return NULL;
	}
	if (bpf_map_update_elem(&sched_slots, &cgroup, &fresh, BPF_NOEXIST) != 0)
		bpf_map_push_elem(&sched_free_slots, &fresh, 0); /* another CPU gave it one first */
	else
		__sync_fetch_and_add(&sched_slots_given, 1);
	return bpf_map_lookup_elem(&sched_slots, &cgroup);
}

/* This CPU's counts of `cgroup`, from the slot `*cached` (last found for it) when it still
 * counts for that cgroup, else from the cgroup's slot in sched_slots, which `*cached` then
 * records. A slot's copy on a CPU is claimed (cleared, its `cgroup` set) the first time it
 * counts there for its cgroup; user space zeroes every copy of a slot it frees, so a task that
 * kept a slot its cgroup gave up finds it no longer counts for it. */
static __always_inline struct sched_cgroup_stats *stats_of(__u64 cgroup, __u32 *cached)
{
	struct sched_cgroup_stats *s = bpf_map_lookup_elem(&sched_stats, cached);
	__u32 *slot, *seen, zero = 0;

	if (s && s->cgroup == cgroup) {
		mark_moved(*cached);
		return s;
	}
	slot = slot_of(cgroup);
	if (!slot)
		return NULL;
	*cached = *slot;
	s = bpf_map_lookup_elem(&sched_stats, cached);
	if (!s)
		return NULL;
	mark_moved(*cached);
	if (s->cgroup == cgroup)
		return s;
	__builtin_memset(s, 0, sizeof(*s));
	s->cgroup = cgroup;
	seen = bpf_map_lookup_elem(&sched_slots_seen, &zero);
	if (seen && *cached >= *seen)
		*seen = *cached + 1;
	return s;
}

/* 1 once a pair counted since user space last took it: a collection reads the pairs map (all
 * its buckets) only then. Set after the count, so that user space, which clears it before
 * reading, reads every count it saw marked; set only when clear, as sched_moved. */
__u8 sched_pairs_counted = 0;

static __always_inline void count_pair(__u64 preempted, __u64 preempting)
{
	struct sched_pair pair = {.preempted = preempted, .preempting = preempting};
	__u64 *n = bpf_map_lookup_elem(&sched_preemptions, &pair);

	if (n) {
		(*n)++;
	} else {
		__u64 one = 1;
		if (bpf_map_update_elem(&sched_preemptions, &pair, &one, BPF_NOEXIST) == -E2BIG)
			__sync_fetch_and_add(&sched_pairs_overflows, 1);
	}
	if (!sched_pairs_counted)
		sched_pairs_counted = 1;
}

/* Wakeup-hook source: how long `next` waited since its wakeup or preemption. */
static __always_inline __u64 hooked_wait_ns(struct task_struct *next)
{
	__u32 pid = BPF_CORE_READ(next, pid);
	__u64 *at = bpf_map_lookup_elem(&sched_enqueued_at, &pid);
	__u64 queued, now;

	if (!at)
		return 0;
	queued = *at;
	bpf_map_delete_elem(&sched_enqueued_at, &pid);
	now = bpf_ktime_get_ns();
	return now > queued ? now - queued : 0;
}

/* prev's cgroup id, kept in its storage while its css_set is the one the id was read through
 * (four dependent loads, often cache misses): a task holds a reference on its css_set, and
 * moving it to another cgroup gives it another one. */
static __always_inline __u64 cgroup_of(struct task_struct *prev, struct task_seen *seen)
{
	__u64 css_set = (__u64)prev->cgroups;
	__u64 cgroup;

	if (seen && seen->css_set == css_set)
		return seen->cgroup;
	cgroup = btf_task_cgroup_id(prev);
	if (seen) {
		seen->css_set = css_set;
		seen->cgroup = cgroup;
	}
	return cgroup;
}

/* How long a cfs_rq has been throttled, its own or an ancestor's bandwidth spent: the
 * throttlings that ended plus the one under way (throttled_clock_self is its start, 0 when
 * none; kernel/sched/fair.c tg_throttle_down / tg_unthrottle_up, since commit 677ea015f231
 * "sched: add throttled time stat for throttled children", Linux 6.6). */
static __always_inline __u64 throttled_so_far(__u64 done, __u64 since, __u64 now)
{
	return since && now > since ? done + (now - since) : done;
}

/* Of the wait that just ended (`wait` ns, since prev last switched out), the part prev's CPU
 * group was throttled: how much the throttled time of the cfs_rq prev switched out to grew
 * since then, at most the wait. On Linux 6.18 a throttled task leaves its cfs_rq for a limbo
 * list until the group gets quota again ("sched/fair: Switch to task based throttle model"),
 * and sched_info counts that as run delay (it never saw the task dequeued), as earlier
 * kernels did for a throttled cfs_rq's queued tasks. Records where the next wait starts. */
static __always_inline __u64 throttled_part(struct task_struct *prev, struct task_seen *seen,
					    bool known, __u64 wait)
{
	struct cfs_rq *cfs;
	__u64 now, then = 0, part = 0;

	if (!bpf_core_field_exists(prev->se.cfs_rq) ||
	    !bpf_core_field_exists(struct cfs_rq, throttled_clock_self_time))
		return 0;
	cfs = prev->se.cfs_rq;
	now = cfs->throttled_clock_self_time;
	if (cfs->throttled_clock_self) /* the rq's clock only while throttled */
		now = throttled_so_far(now, cfs->throttled_clock_self, cfs->rq->clock);
	if (known && seen->cfs_rq == (__u64)cfs) {
		then = now;
	} else if (known && seen->cfs_rq) {
		/* moved to another CPU or group while it waited: the one it waited on first */
		struct cfs_rq *old = (void *)seen->cfs_rq;

		then = throttled_so_far(BPF_CORE_READ(old, throttled_clock_self_time),
					BPF_CORE_READ(old, throttled_clock_self),
					BPF_CORE_READ(old, rq, clock));
	}
	if (known && then > seen->throttled)
		part = then - seen->throttled;
	seen->cfs_rq = (__u64)cfs;
	seen->throttled = now;
	return part < wait ? part : wait;
}

/* Whether the slice now ending is prev's first and all of it was in view: born after the probe
 * loaded and, where the kernel counts slices (sched_info.pcount), switched in once. A task
 * without storage (none could be made) or born between load and attach is not "first" at a
 * later slice, which would otherwise add its whole past as one wait. */
static __always_inline bool first_slice_in_view(struct task_struct *prev)
{
	if (prev->start_time < loaded_at_ns)
		return false;
	return !bpf_core_field_exists(prev->sched_info) || prev->sched_info.pcount <= 1;
}

static __always_inline void count_first_wait(struct sched_cgroup_stats *s, bool first, __u64 wait)
{
	if (first) {
		s->first_waits++;
		s->first_wait_ns += wait;
	}
}

/* The slice that just ended and the run-queue wait before it, for `prev` (= current), counted
 * in `s` when its cgroup has a slot. Either way prev's storage records where its counters
 * stand, so a slice counted after some that found no slot (all taken) adds its own wait,
 * not theirs too. */
static __always_inline void count_slice(struct sched_cgroup_stats *s, struct task_struct *prev,
					struct task_seen *seen, struct cpu_carry *carry)
{
	__u64 exec = prev->se.sum_exec_runtime;
	int policy = prev->policy;
	bool known = seen && seen->seen;
	bool first = !known && first_slice_in_view(prev);

	/* Growth of the runtime cpuacct charges since the task last switched out. Not
	 * sum_exec_runtime - prev_sum_exec_runtime: set_next_entity() resets that when a task
	 * that had the CPU alone is picked again, with no switch to see. That difference is
	 * only the fallback for a fair task seen late. */
	if (s) {
		if (known)
			s->oncpu_ns += exec - seen->exec_ns;
		else if (first)
			s->oncpu_ns += exec;
		else if (policy == SCHED_NORMAL || policy == SCHED_BATCH || policy == SCHED_IDLE)
			s->oncpu_ns += exec - prev->se.prev_sum_exec_runtime;
	}

	if (runq_source == SCHED_RUNQ_SCHED_INFO && bpf_core_field_exists(prev->sched_info)) {
		__u64 delay = prev->sched_info.run_delay;
		__u64 wait = known ? delay - seen->run_delay : delay;
		__u64 throttled = seen ? throttled_part(prev, seen, known, wait) : 0;

		if (s && (known || first)) {
			hist_add(&s->runq_latency, wait);
			s->runq_throttled_ns += throttled;
			count_first_wait(s, first, wait);
		}
		if (seen)
			seen->run_delay = delay;
	} else if (s) {
		hist_add(&s->runq_latency, carry->wait_ns);
		count_first_wait(s, first, carry->wait_ns);
	}
	if (seen) {
		seen->exec_ns = exec;
		seen->seen = 1;
	}
}

static __always_inline void on_switch(bool preempt, struct task_struct *next,
				      unsigned int prev_state)
{
	struct task_struct *prev = bpf_get_current_task_btf();
	/* nivcsw when preempted, or switched out while still TASK_RUNNING (yield). */
	bool runnable = preempt || prev_state == TASK_RUNNING;
	struct sched_cgroup_stats *s;
	struct cpu_carry *carry;
	struct task_seen *seen;
	__u32 zero = 0, no_cache = 0;
	__u64 cgroup;

	carry = bpf_map_lookup_elem(&sched_cpu_carry, &zero);
	if (!carry)
		return;
	if (!prev->pid) { /* the idle task: nothing of its own to count, and preempts no one */
		carry->preempted = 0;
		if (runq_source == SCHED_RUNQ_WAKEUP_HOOK)
			carry->wait_ns = hooked_wait_ns(next);
		return;
	}
	seen = bpf_task_storage_get(&sched_task_seen, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	cgroup = cgroup_of(prev, seen);
	/* The task switched in at this CPU's previous switch is prev: it took the CPU from
	 * carry->preempted. */
	if (carry->preempted && carry->preempted != cgroup)
		count_pair(carry->preempted, cgroup);
	carry->preempted = runnable ? cgroup : 0;

	s = stats_of(cgroup, seen ? &seen->slot : &no_cache);
	if (s) {
		if (runnable)
			s->nonvoluntary_switches++;
		else
			s->voluntary_switches++;
	}
	count_slice(s, prev, seen, carry);
	if (runq_source == SCHED_RUNQ_WAKEUP_HOOK) {
		if (runnable) {
			__u32 pid = prev->pid;
			__u64 ts = bpf_ktime_get_ns();

			bpf_map_update_elem(&sched_enqueued_at, &pid, &ts, BPF_ANY);
		}
		carry->wait_ns = hooked_wait_ns(next);
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, next, prev_state);
	return 0;
}

/* Not attached: user space runs it on each CPU (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU, an IPI there), where current is whatever that CPU is running. */
SEC("raw_tp")
int BPF_PROG(sched_running_now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	__u64 *cgroup = bpf_map_lookup_elem(&sched_cpu_cgroup, &zero);

	if (cgroup)
		*cgroup = task->pid ? btf_task_cgroup_id(task) : 0;
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit_raw)
{
	/* do_exit() raises it for current. */
	struct task_struct *task = bpf_get_current_task_btf();
	struct sched_cgroup_stats *s;
	__u32 no_cache = 0;

	if (task->pid != task->tgid)
		return 0;
	s = stats_of(btf_task_cgroup_id(task), &no_cache);
	if (s)
		s->exited_processes++;
	return 0;
}

/* Wakeup-hook source timestamps (runq_source == SCHED_RUNQ_WAKEUP_HOOK). */
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
