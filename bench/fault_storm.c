/* A page-fault storm: map anonymous memory, touch every page once (one minor fault each),
 * unmap, and again, a fixed number of times. Prints the elapsed seconds, the CPU seconds it
 * used (user + system: on a shared machine this leaves out time waiting for the CPU) and the
 * minor faults it took (getrusage), for bench/page_fault_storm.sh.
 *
 * "cow" maps a file already in the page cache privately instead and writes every page: a
 * copy-on-write fault each, which copies the file's page (a program loading data and changing
 * it in place). Reading the file's pages would fault once per 16 (the kernel maps cached pages
 * around each fault).
 *
 *   fault_storm [iterations] [MiB per iteration] [anon|cow]   (defaults: 4, 64, anon) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

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
	int file = -1;

	if (argc > 3 && strcmp(argv[3], "cow") == 0) {
		/* A file on disk, written once: its pages stay in the page cache. */
		char path[] = "/var/tmp/fault_storm.XXXXXX";
		char chunk[4096];

		file = mkstemp(path);
		if (file < 0) {
			perror("mkstemp");
			return 1;
		}
		unlink(path);
		memset(chunk, 1, sizeof(chunk));
		for (size_t off = 0; off < bytes; off += sizeof(chunk)) {
			if (write(file, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
				perror("write");
				return 1;
			}
		}
	}
	getrusage(RUSAGE_SELF, &usage);
	long faults_before = usage.ru_minflt;

	clock_gettime(CLOCK_MONOTONIC, &start);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
	for (long i = 0; i < iterations; i++) {
		volatile char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					file >= 0 ? MAP_PRIVATE : MAP_PRIVATE | MAP_ANONYMOUS, file, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		/* 4 KiB pages, one fault each: no transparent huge pages here. */
		madvise((void *)p, bytes, MADV_NOHUGEPAGE);
		for (size_t off = 0; off < bytes; off += page)
			p[off] = 2;
		munmap((void *)p, bytes);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
	clock_gettime(CLOCK_MONOTONIC, &end);
	getrusage(RUSAGE_SELF, &usage);
	printf("%.4f %.4f %ld\n", seconds(&start, &end), seconds(&cpu_start, &cpu_end),
	       usage.ru_minflt - faults_before);
	return 0;
}
