/*
 * bench/probes/prefetch_timer.c - does bench/compare's call timer wait
 * for a prefetch?
 *
 * The tail harness times a call between `lfence; rdtsc` and `rdtscp;
 * lfence` (bench/cmp/cmp_tick.h). RDTSCP waits for earlier loads; if it
 * also waited for a software prefetch to bring its line in, every
 * prefetch of a line far away would be charged to the call that issued
 * it, and the warm-up mark's prefetches would look dearer than they are.
 * This times, with the same timer, an empty region, one prefetch (read,
 * then write intent) of a line just flushed from the caches, and one
 * load of such a line; and the same with `lfence; rdtsc; lfence` as the
 * closing read. x86-64 only.
 *
 * Build and run:
 *   gcc -O2 -o build/prefetch_timer bench/probes/prefetch_timer.c
 *   taskset -c 1 build/prefetch_timer
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <x86intrin.h>

static inline uint64_t pt_begin(void)
{
	unsigned lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t pt_end_rdtscp(void)
{
	unsigned lo, hi, aux;
	__asm__ volatile("rdtscp; lfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t pt_end_lfence(void)
{
	unsigned lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}

static int pt_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define PT_N 20001
#define PT_BUF (64u << 20)

enum { PT_EMPTY, PT_PREFETCH, PT_PREFETCHW, PT_LOAD, PT_KINDS };

static uint64_t pt_t[2][PT_KINDS][PT_N];

int main(void)
{
	char *buf = aligned_alloc(4096, PT_BUF);
	if (!buf) {
		perror("prefetch_timer: aligned_alloc");
		return 1;
	}
	memset(buf, 1, PT_BUF);
	volatile char sink = 0;
	for (int i = 0; i < PT_N; i++) {
		/* a line in a page the flush leaves in the TLB: only the
		 * line's own fetch is left to wait for */
		char *p = buf + (size_t)((unsigned)i * 4099u % (PT_BUF / 64u)) * 64u;
		for (int end = 0; end < 2; end++) {
			for (int k = 0; k < PT_KINDS; k++) {
				_mm_clflush(p);
				_mm_mfence();
				uint64_t a = pt_begin();
				if (k == PT_PREFETCH)
					__builtin_prefetch(p, 0);
				else if (k == PT_PREFETCHW)
					__builtin_prefetch(p, 1);
				else if (k == PT_LOAD)
					sink = *(volatile char *)p;
				uint64_t b = end ? pt_end_lfence() : pt_end_rdtscp();
				pt_t[end][k][i] = b - a;
			}
		}
	}
	(void)sink;
	static const char *const kind[PT_KINDS] = {"empty", "prefetch", "prefetchw", "load"};
	static const char *const close[2] = {"rdtscp; lfence", "lfence; rdtsc; lfence"};
	printf("TSC ticks between the reads, %d regions each, the line flushed before each\n",
	       PT_N);
	for (int end = 0; end < 2; end++)
		for (int k = 0; k < PT_KINDS; k++) {
			uint64_t *t = pt_t[end][k];
			qsort(t, PT_N, sizeof(*t), pt_cmp);
			printf("  %-10s closed by %-22s p10 %5llu  p50 %5llu  p90 %5llu  p99 %5llu\n",
			       kind[k], close[end], (unsigned long long)t[PT_N / 10],
			       (unsigned long long)t[PT_N / 2],
			       (unsigned long long)t[PT_N * 9 / 10],
			       (unsigned long long)t[PT_N * 99 / 100]);
		}
	free(buf);
	return 0;
}
#else
int main(void)
{
	fprintf(stderr, "prefetch_timer: x86-64 only\n");
	return 2;
}
#endif
