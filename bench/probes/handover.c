/*
 * bench/probes/handover.c - which calls are ringtrace's slow ones?
 *
 * A probe for issue 16's tail latency, kept apart from the benchmarks: it
 * times each of N calls of a one-int event (the event of bench/compare)
 * with `lfence; rdtsc` ... `rdtscp; lfence`, after a warm-up, in a session
 * like bench/compare's (recorder thread on the CPU the program was started
 * on, the measured thread pinned to CPU 0), then finds the period at which
 * the slow calls come back (the events a page holds, 4,089 of these with
 * 64 KiB pages) and splits them into those at a page hand-over and the
 * others. Not timed against anything else: a diagnosis, not a figure of
 * merit (bench/compare --parts tail gives those).
 *
 * Build (after `cmake --build build`):
 *   gcc -O2 -Iinclude -Ibench/cmp bench/probes/handover.c bench/cmp/cmp_rt_events.c \
 *       build/lib/libringtrace.a -lpthread -o build/handover
 * Run:
 *   taskset -c 1 build/handover discard 128m /dev/shm/ho
 *   taskset -c 1 build/handover overwrite 4m /dev/shm/ho2
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <x86intrin.h>

#include <ringtrace/session.h>

#include "cmp_rt_events.h"

#define HO_N 1000000u
#define HO_WARMUP 50000u
#define HO_SLOW 600u /* ticks: ~250 ns at 2.4 GHz, 15 x a call */
#define HO_PMAX 8192u

static int ho_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: handover discard|overwrite POOL_BYTES[k|m] DIR\n");
		return 2;
	}
	char *end;
	size_t pool = strtoull(argv[2], &end, 10);
	if (*end == 'k')
		pool <<= 10;
	else if (*end == 'm')
		pool <<= 20;
	struct ringtrace_session_config c;
	ringtrace_session_config_init(&c);
	c.output_dir = argv[3];
	c.events = "cmp_int";
	c.mode = strcmp(argv[1], "overwrite") ? RINGTRACE_RB_DISCARD : RINGTRACE_RB_OVERWRITE;
	c.pool_size = pool;
	if (ringtrace_session_start(&c) < 0) {
		fprintf(stderr, "handover: %s\n", ringtrace_last_error());
		return 1;
	}
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
	uint32_t *t = mmap(NULL, HO_N * sizeof(*t), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (t == MAP_FAILED)
		return 1;
	memset(t, 0, HO_N * sizeof(*t));
	for (uint32_t i = 0; i < HO_WARMUP; i++)
		trace_cmp_int((int)i);
	unsigned aux;
	for (uint32_t i = 0; i < HO_N; i++) {
		_mm_lfence();
		uint64_t a = __rdtsc();
		trace_cmp_int((int)i);
		uint64_t b = __rdtscp(&aux);
		_mm_lfence();
		t[i] = (uint32_t)(b - a);
	}
	if (ringtrace_session_stop() < 0)
		fprintf(stderr, "handover: stop: %s\n", ringtrace_last_error());
	/* The period that gathers the most slow calls at one residue. */
	static uint32_t hist[HO_PMAX];
	uint32_t best_p = 0, best_r = 0, best_n = 0, nslow = 0;
	for (uint32_t i = 0; i < HO_N; i++)
		nslow += t[i] > HO_SLOW;
	uint32_t *idx = calloc(nslow + 1, sizeof(*idx)), k = 0;
	for (uint32_t i = 0; i < HO_N; i++)
		if (t[i] > HO_SLOW)
			idx[k++] = i;
	/* The period: the most frequent gap between two slow calls in a row
	 * (a residue count would prefer the period's divisors). */
	for (uint32_t j = 1; j < nslow; j++) {
		uint32_t g = idx[j] - idx[j - 1];
		if (g >= 1024 && g < HO_PMAX && ++hist[g] > best_n) {
			best_n = hist[g];
			best_p = g;
		}
	}
	if (best_p) {
		memset(hist, 0, sizeof(hist));
		best_n = 0;
		for (uint32_t j = 0; j < nslow; j++)
			if (++hist[idx[j] % best_p] > best_n) {
				best_n = hist[idx[j] % best_p];
				best_r = idx[j] % best_p;
			}
	}
	uint32_t *at = calloc(nslow + 1, sizeof(*at)), *other = calloc(nslow + 1, sizeof(*other));
	uint32_t nat = 0, nother = 0, boundaries = 0, fast_at = 0;
	for (uint32_t i = 0; i < HO_N; i++) {
		int on = best_p && i % best_p == best_r;
		boundaries += on;
		if (t[i] > HO_SLOW)
			(on ? at : other)[on ? nat++ : nother++] = t[i];
		else if (on)
			fast_at++;
	}
	qsort(at, nat, sizeof(*at), ho_cmp);
	qsort(other, nother, sizeof(*other), ho_cmp);
	printf("%s, pool %zu bytes: %u calls, %u slower than %u ticks\n", argv[1], pool, HO_N,
	       nslow, HO_SLOW);
	printf("period of the slow calls: every %u calls (residue %u): %u of them there\n", best_p,
	       best_r, nat);
	printf("calls at that period: %u, of which %u fast\n", boundaries, fast_at);
	if (nat)
		printf("slow at the period: median %u ticks, max %u\n", at[nat / 2], at[nat - 1]);
	if (nother)
		printf("slow elsewhere: %u, median %u ticks, max %u\n", nother, other[nother / 2],
		       other[nother - 1]);
	return 0;
}
