/* OOM kills: one ring-buffer event per victim of the kernel's OOM killer, and per SIGKILL
 * sent by a configured user-space OOM killer. Rare events, so each crosses to user space. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cgroup_id.bpf.h"
#include "core_fixes.bpf.h"
#include "oom.h"

#define SIGKILL 9
#define TRACE_SIGNAL_DELIVERED 0

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} oom_events SEC(".maps");

/* comm → 1 for the processes whose SIGKILLs are user-space OOM kills. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OOM_MAX_KILLER_COMMS);
	__type(key, char[OOM_COMM_LEN]);
	__type(value, __u8);
} oom_killer_comms SEC(".maps");

/* The killers' executables → 1: a SIGKILL counts only when the sender runs one of them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OOM_MAX_KILLER_EXES);
	__type(key, struct oom_killer_exe);
	__type(value, __u8);
} oom_killer_exes SEC(".maps");

/* The highest uid a killer may run as (system accounts by default). */
const volatile __u32 killer_max_uid = 999;

/* Events that found the ring buffer full, by enum oom_event_kind. */
__u64 oom_events_lost[2] = {};

static __always_inline struct oom_event *reserve_event(__u16 kind)
{
	struct oom_event *e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&oom_events_lost[kind & 1], 1);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->timestamp_ns = bpf_ktime_get_ns();
	e->kind = kind;
	return e;
}

static __always_inline void fill_trigger(struct oom_event *e)
{
	struct task_struct *current = (struct task_struct *)bpf_get_current_task();

	e->trigger_pid = bpf_get_current_pid_tgid() >> 32;
	e->trigger_cgroup_id = task_cgroup_id(current);
	bpf_get_current_comm(e->trigger_comm, sizeof(e->trigger_comm));
}

static __always_inline void fill_victim(struct oom_event *e, struct task_struct *victim)
{
	struct mm_struct *mm = BPF_CORE_READ(victim, mm);

	e->victim_pid = BPF_CORE_READ(victim, tgid);
	e->victim_cgroup_id = task_cgroup_id(victim);
	BPF_CORE_READ_STR_INTO(&e->victim_comm, victim, comm);
	e->oom_score_adj = BPF_CORE_READ(victim, signal, oom_score_adj);
	if (!mm) {
		e->flags |= OOM_FLAG_NO_MEMORY_FIGURES;
		return;
	}
	e->total_vm_pages = BPF_CORE_READ(mm, total_vm);
	/* An anonymous enum, so not relocatable; its values are fixed since Linux 4.5. */
	e->anon_rss_pages = mm_rss_pages(mm, MM_ANONPAGES);
	e->file_rss_pages = mm_rss_pages(mm, MM_FILEPAGES);
	e->shmem_rss_pages = mm_rss_pages(mm, MM_SHMEMPAGES);
}

/* Raw form, chosen when the tracepoint passes the victim task (BTF of btf_trace_mark_victim). */
SEC("raw_tp/mark_victim")
int BPF_PROG(oom_mark_victim_raw, struct task_struct *victim)
{
	struct oom_event *e = reserve_event(OOM_KIND_KERNEL);

	if (!e)
		return 0;
	fill_victim(e, victim);
	fill_trigger(e);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Classic form: only the pid is certain; user space resolves the victim's cgroup. */
SEC("tp/oom/mark_victim")
int oom_mark_victim_tp(struct trace_event_raw_mark_victim *ctx)
{
	struct oom_event *e = reserve_event(OOM_KIND_KERNEL);

	if (!e)
		return 0;
	e->flags = OOM_FLAG_VICTIM_CGROUP_UNKNOWN;
	e->victim_pid = BPF_CORE_READ(ctx, pid);
	if (bpf_core_field_exists(ctx->total_vm)) {
		/* These fields are in kB (include/trace/events/oom.h, since 6.8). */
		e->total_vm_pages = BPF_CORE_READ(ctx, total_vm) / 4;
		e->anon_rss_pages = BPF_CORE_READ(ctx, anon_rss) / 4;
		e->file_rss_pages = BPF_CORE_READ(ctx, file_rss) / 4;
		e->shmem_rss_pages = BPF_CORE_READ(ctx, shmem_rss) / 4;
		e->oom_score_adj = BPF_CORE_READ(ctx, oom_score_adj);
		bpf_probe_read_kernel_str(e->victim_comm, sizeof(e->victim_comm),
					  (void *)ctx + (BPF_CORE_READ(ctx, __data_loc_comm) & 0xffff));
	} else {
		e->flags |= OOM_FLAG_NO_MEMORY_FIGURES;
	}
	fill_trigger(e);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* A process is a killer by its name, its executable and its uid together: any process can
 * name itself "earlyoom", but it cannot run /usr/bin/earlyoom as a system user. */
static __always_inline bool current_is_killer(void)
{
	char comm[OOM_COMM_LEN] = {};
	struct task_struct *task;
	struct oom_killer_exe exe = {};
	struct inode *inode;

	bpf_get_current_comm(comm, sizeof(comm));
	if (!bpf_map_lookup_elem(&oom_killer_comms, comm))
		return false;
	if ((__u32)bpf_get_current_uid_gid() > killer_max_uid)
		return false;
	task = (struct task_struct *)bpf_get_current_task();
	inode = BPF_CORE_READ(task, mm, exe_file, f_inode);
	if (!inode)
		return false;
	exe.ino = BPF_CORE_READ(inode, i_ino);
	exe.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	return bpf_map_lookup_elem(&oom_killer_exes, &exe) != NULL;
}

SEC("raw_tp/signal_generate")
int BPF_PROG(oom_signal_generate_raw, int sig, struct kernel_siginfo *info,
	     struct task_struct *task, int group, int result)
{
	struct oom_event *e;

	if (sig != SIGKILL || result != TRACE_SIGNAL_DELIVERED || !current_is_killer())
		return 0;
	e = reserve_event(OOM_KIND_USERSPACE);
	if (!e)
		return 0;
	fill_victim(e, task);
	fill_trigger(e);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp/signal/signal_generate")
int oom_signal_generate_tp(struct trace_event_raw_signal_generate *ctx)
{
	struct oom_event *e;

	if (BPF_CORE_READ(ctx, sig) != SIGKILL || BPF_CORE_READ(ctx, result) != TRACE_SIGNAL_DELIVERED ||
	    !current_is_killer())
		return 0;
	e = reserve_event(OOM_KIND_USERSPACE);
	if (!e)
		return 0;
	e->flags = OOM_FLAG_VICTIM_CGROUP_UNKNOWN | OOM_FLAG_NO_MEMORY_FIGURES;
	e->victim_pid = BPF_CORE_READ(ctx, pid);
	BPF_CORE_READ_STR_INTO(&e->victim_comm, ctx, comm);
	fill_trigger(e);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
