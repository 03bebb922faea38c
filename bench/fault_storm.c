/* A page-fault storm: map anonymous memory, touch every page once (one minor fault each),
 * unmap, and again, a fixed number of times. Prints the elapsed seconds, the CPU seconds it
 * used (user + system: on a shared machine this leaves out time waiting for the CPU) and the
 * minor faults it took (getrusage), for bench/page_fault_storm.sh.
 *
 *   fault_storm [iterations] [MiB per iteration]     (defaults: 4, 64) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

static double seconds(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 4;
	size_t bytes = (size_t)(argc > 2 ? atol(argv[2]) : 64) << 20;
	long page = 4096;
	struct timespec start, end, cpu_start, cpu_end;
	struct rusage usage;

	clock_gettime(CLOCK_MONOTONIC, &start);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
	for (long i = 0; i < iterations; i++) {
		volatile char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		/* 4 KiB pages, one fault each: no transparent huge pages here. */
		madvise((void *)p, bytes, MADV_NOHUGEPAGE);
		for (size_t off = 0; off < bytes; off += page)
			p[off] = 1;
		munmap((void *)p, bytes);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
	clock_gettime(CLOCK_MONOTONIC, &end);
	getrusage(RUSAGE_SELF, &usage);
	printf("%.4f %.4f %ld\n", seconds(&start, &end), seconds(&cpu_start, &cpu_end),
	       usage.ru_minflt);
	return 0;
}
