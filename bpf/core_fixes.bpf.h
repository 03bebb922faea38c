/* Kernel struct differences, in one place. */
#ifndef STAGEWATCH_CORE_FIXES_BPF_H
#define STAGEWATCH_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* Before 6.2, mm->rss_stat was a struct of atomic counters; since then it is an array of
 * percpu_counters (commit f1a7941243c1, "mm: convert mm's rss stats into percpu_counter"). */
struct mm_rss_stat___pre62 {
	atomic_long_t count[4];
};
struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
};

/* Pages of one rss kind (MM_FILEPAGES, MM_ANONPAGES, MM_SHMEMPAGES). The percpu_counter's
 * global count leaves out per-CPU deltas not yet folded in: at most a batch per CPU. */
static __always_inline __u64 mm_rss_pages(struct mm_struct *mm, int member)
{
	__s64 pages;

	if (!mm)
		return 0;
	if (bpf_core_type_exists(struct mm_rss_stat___pre62)) {
		struct mm_struct___pre62 *old = (void *)mm;

		pages = BPF_CORE_READ(old, rss_stat.count[member].counter);
	} else {
		pages = BPF_CORE_READ(mm, rss_stat[member].count);
	}
	return pages > 0 ? pages : 0;
}

/* Before 5.14 a task's state was `long state`; since then it is `unsigned int __state`
 * (commit 2f064a59a11f, "sched: Change task_struct::state"). */
struct task_struct___pre514 {
	long state;
};

static __always_inline __u32 task_state_word(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)task, state);
}

/* The CPU a task is on (the kernel's task_cpu()). Since 5.16 it is thread_info.cpu where the
 * thread_info lives in the task (commit bcf9033e5449, "sched: move CPU field back into
 * thread_info if THREAD_INFO_IN_TASK=y"); before, task_struct.cpu. */
struct task_struct___pre516 {
	unsigned int cpu;
};

static __always_inline __u32 task_cpu_of(struct task_struct *task)
{
	if (bpf_core_field_exists(task->thread_info.cpu))
		return BPF_CORE_READ(task, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___pre516 *)task, cpu);
}

/* task_cpu_of() for a BTF-typed task the verifier trusts: a plain load where it can. */
static __always_inline __u32 btf_task_cpu(struct task_struct *task)
{
	if (bpf_core_field_exists(task->thread_info.cpu))
		return task->thread_info.cpu;
	return BPF_CORE_READ((struct task_struct___pre516 *)task, cpu);
}

#endif
