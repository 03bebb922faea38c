/* The cgroup id of a task in the hierarchy that user space chose (cgroup_key.h). */
#ifndef STAGEWATCH_CGROUP_ID_BPF_H
#define STAGEWATCH_CGROUP_ID_BPF_H

#include <bpf/bpf_core_read.h>
#include "cgroup_key.h"

/* Set by the agent before load; the verifier prunes the branch not taken. */
const volatile __u32 cgroup_key = CGROUP_KEY_DEFAULT;

/* A cgroup's id is its kernfs node id, which is also its directory's inode number
 * (kernel/cgroup/cgroup.c: cgroup_id(), fs/kernfs/mount.c: kernfs_id_ino() on 64-bit). */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
	if (!task)
		return 0;
	if (cgroup_key == CGROUP_KEY_V1_MEMORY) {
		int memory_subsys = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
		struct cgroup_subsys_state *css;

		css = BPF_CORE_READ(task, cgroups, subsys[memory_subsys]);
		return BPF_CORE_READ(css, cgroup, kn, id);
	}
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* task_cgroup_id() for a BTF-typed task the verifier trusts (bpf_get_current_task_btf(),
 * tp_btf arguments): plain loads, where task_cgroup_id() makes one bpf_probe_read_kernel()
 * call per pointer. */
static __always_inline __u64 btf_task_cgroup_id(struct task_struct *task)
{
	if (cgroup_key == CGROUP_KEY_V1_MEMORY) {
		int memory_subsys = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);

		return task->cgroups->subsys[memory_subsys]->cgroup->kn->id;
	}
	return task->cgroups->dfl_cgrp->kn->id;
}

#endif
