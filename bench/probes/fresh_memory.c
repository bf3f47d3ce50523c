/*
 * bench/probes/fresh_memory.c - does a populated shared mapping still cost
 * something at its first store?
 *
 * A probe kept apart from the benchmarks (a diagnosis of the
 * machine, not a figure of merit). It maps SIZE MiB of a memfd the way
 * ringtrace_rb_create() maps a pool (MAP_SHARED | MAP_POPULATE, then
 * MADV_POPULATE_WRITE), optionally stores one zero to each 4 KiB page
 * (what ringtrace_rb_create() does since this probe), and then times one
 * store to each page (rdtsc ticks around it) and counts the page faults
 * the process took meanwhile (getrusage).
 *
 * On a machine that backs memory eagerly, the timed stores cost a few
 * tens of ticks and no fault with or without the touch. On a VM whose
 * host backs guest memory lazily (a Firecracker VM with free-page
 * reporting: docs/benchmarks-history.md, "fresh memory behind a populated
 * pool"),
 * without the touch each first store traps to the host: thousands of
 * ticks, with no fault the guest counts.
 *
 * Build and run:
 *   gcc -O2 bench/probes/fresh_memory.c -o build/fresh_memory
 *   build/fresh_memory 128 0     (populate only)
 *   build/fresh_memory 128 1     (populate, then one store a page)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double fm_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long fm_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt + u.ru_majflt;
}

static int fm_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fresh_memory SIZE_MIB TOUCH(0|1)\n");
		return 2;
	}
	size_t total = strtoull(argv[1], NULL, 10) << 20;
	int touch = atoi(argv[2]);
	size_t npages = total / 4096;
	uint64_t *t = calloc(npages ? npages : 1, sizeof(*t));
	int fd = memfd_create("fresh_memory", MFD_CLOEXEC);
	if (t)
		memset(t, 0xff, npages * sizeof(*t)); /* (its own page faults, now) */
	if (!t || !npages || fd < 0 || ftruncate(fd, (off_t)total) < 0) {
		perror("fresh_memory");
		return 1;
	}
	double t0 = fm_now();
	char *b = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (b == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	int adv = madvise(b, total, MADV_POPULATE_WRITE);
	double t1 = fm_now();
	if (touch)
		for (size_t off = 0; off < total; off += 4096)
			*(volatile char *)(b + off) = 0;
	double t2 = fm_now();
	long f0 = fm_faults();
	/* (at the middle of each page: not the byte the touch wrote) */
	for (size_t i = 0; i < npages; i++) {
		uint64_t a = __rdtsc();
		*(volatile char *)(b + i * 4096 + 2048) = 1;
		t[i] = __rdtsc() - a;
	}
	long f1 = fm_faults();
	qsort(t, npages, sizeof(*t), fm_cmp);
	printf("%zu MiB, touch %d: mmap+populate %.1f ms (MADV_POPULATE_WRITE %s), touch %.1f ms; "
	       "then one store a page (%zu pages): median %llu ticks, p90 %llu, max %llu; "
	       "%ld page faults during those stores\n",
	       total >> 20, touch, (t1 - t0) * 1e3, adv == 0 ? "ok" : "failed", (t2 - t1) * 1e3,
	       npages, (unsigned long long)t[npages / 2], (unsigned long long)t[npages * 9 / 10],
	       (unsigned long long)t[npages - 1], f1 - f0);
	return 0;
}
