/* Task states per cgroup in one pass over the kernel's task list: a task iterator that writes
 * one record per user thread (bpf/task_states.h), read by the agent at scrape time. It replaces
 * reading each cgroup's `tasks` list (cgroup v1 builds and sorts a pid list on every open) and
 * then each thread's /proc/<tid>/stat. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgroup_id.bpf.h"
#include "core_fixes.bpf.h"
#include "task_states.h"

/* include/linux/sched.h: kernel threads sit in the root cgroup, which no stage owns. */
#define PF_KTHREAD 0x00200000

char LICENSE[] SEC("license") = "GPL";

SEC("iter/task")
int task_states(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct task_state_record r;

	/* Called once more with no task at the end of the pass. */
	if (!task || (task->flags & PF_KTHREAD))
		return 0;
	r.cgroup_id = btf_task_cgroup_id(task);
	r.state = task_state_word(task);
	r.exit_state = task->exit_state;
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
