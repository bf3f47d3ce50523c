/*
 * bench/probes/handover.c - which calls are ringtrace's slow ones?
 *
 * A probe for issue 16's tail latency, kept apart from the benchmarks: it
 * times each of N calls of a one-int event (the event of bench/compare)
 * with `lfence; rdtsc` ... `rdtscp; lfence`, after a warm-up, in a session
 * like bench/compare's (recorder thread on the CPU the program was started
 * on, the measured thread pinned to CPU 0), marks the calls during which
 * the thread's page changed (the hand-overs: one in 4,089 of these events
 * with 64 KiB pages) and prints the distribution of those and of the
 * others apart.
 * Not timed against anything else: a diagnosis, not a figure of
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
#define HO_SLOW_CALL 150u /* ticks: ~61 ns at 2.4 GHz, the p99.9 region */

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
	/*
	 * A call is a hand-over when the thread's page changes across it (read
	 * outside the timed region from the writer state the events layer
	 * caches: exact, no period to guess).
	 */
	uint8_t *ho = calloc(HO_N, 1);
	if (!ho)
		return 1;
	unsigned aux;
	const char *pg = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->page : NULL;
	for (uint32_t i = 0; i < HO_N; i++) {
		_mm_lfence();
		uint64_t a = __rdtsc();
		trace_cmp_int((int)i);
		uint64_t b = __rdtscp(&aux);
		_mm_lfence();
		t[i] = (uint32_t)(b - a);
		const char *now = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->page : NULL;
		ho[i] = now != pg;
		pg = now;
	}
	if (ringtrace_session_stop() < 0)
		fprintf(stderr, "handover: stop: %s\n", ringtrace_last_error());
	uint32_t *at = calloc(HO_N, sizeof(*at)), *other = calloc(HO_N, sizeof(*other));
	uint32_t nat = 0, nother = 0, slow_other = 0;
	for (uint32_t i = 0; i < HO_N; i++) {
		if (ho[i])
			at[nat++] = t[i];
		else
			other[nother++] = t[i];
		slow_other += !ho[i] && t[i] > HO_SLOW_CALL;
	}
	qsort(at, nat, sizeof(*at), ho_cmp);
	qsort(other, nother, sizeof(*other), ho_cmp);
	/* All calls together, as bench/compare's tail part reports them. */
	qsort(t, HO_N, sizeof(*t), ho_cmp);
	printf("%s, pool %zu bytes: %u calls (ticks, the timer's own cost included)\n", argv[1],
	       pool, HO_N);
	printf("all calls: median %u, p99 %u, p99.9 %u, p99.99 %u, max %u\n", t[HO_N / 2],
	       t[(uint64_t)HO_N * 99 / 100], t[(uint64_t)HO_N * 999 / 1000],
	       t[(uint64_t)HO_N * 9999 / 10000], t[HO_N - 1]);
	if (nat)
		printf("hand-overs: %u, p10 %u, median %u, p90 %u, max %u\n", nat, at[nat / 10],
		       at[nat / 2], at[(uint64_t)nat * 9 / 10], at[nat - 1]);
	if (nother)
		printf("other calls: %u, median %u, p99 %u, p99.9 %u, p99.99 %u, max %u; "
		       "%u (%.3f%%) slower than %u\n",
		       nother, other[nother / 2], other[(uint64_t)nother * 99 / 100],
		       other[(uint64_t)nother * 999 / 1000], other[(uint64_t)nother * 9999 / 10000],
		       other[nother - 1], slow_other, 100.0 * slow_other / nother, HO_SLOW_CALL);
	return 0;
}
