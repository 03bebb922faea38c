/* A migration storm: the task moves itself between two CPUs with sched_setaffinity, a fixed
 * number of times; each move is one migration (sched:sched_migrate_task with another CPU), for
 * bench/bpf_cost.sh.
 *
 *   migrate_storm [moves] [cpu a] [cpu b]   (defaults: 20000, 0, 1) */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	long moves = argc > 1 ? atol(argv[1]) : 20000;
	int cpus[2] = {argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 1};

	for (long i = 0; i < moves; i++) {
		if (pin(cpus[i & 1]) != 0) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	return 0;
}
