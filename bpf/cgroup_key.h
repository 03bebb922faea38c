/* Which cgroup hierarchy's ids the BPF programs key on. Chosen by user space at start
 * (agent/cgroup/layout.h) and passed in as read-only data. Shared by BPF and C++. */
#ifndef STAGEWATCH_CGROUP_KEY_H
#define STAGEWATCH_CGROUP_KEY_H

enum cgroup_key_hierarchy {
	CGROUP_KEY_DEFAULT = 0,   /* the cgroup v2 (default) hierarchy */
	CGROUP_KEY_V1_MEMORY = 1, /* the v1 memory controller's hierarchy */
};

#endif
