/*
 * bench/probes/handover.c - which calls are ringtrace's slow ones?
 *
 * A probe for the tail latency, kept apart from the benchmarks: it
 * times each of N calls of a one-int event (the event of bench/compare)
 * with `lfence; rdtsc` ... `rdtscp; lfence`, after a warm-up, in a session
 * like bench/compare's (recorder thread on the CPU the program was started
 * on, the measured thread pinned to CPU 0), marks the calls during which
 * the thread's page changed (the hand-overs: one in 4,089 of these events
 * with 64 KiB pages) and the calls that warmed the next switch's lines up
 * (its warm-up mark, 2 KiB before the page's end: ringtrace/static/ring.h),
 * and prints the distribution of each and of the others apart.
 * Not timed against anything else: a diagnosis, not a figure of
 * merit (bench/compare --parts tail gives those).
 *
 * Optional: PAGE, the page size (default: the session's, 64 KiB), and
 * TOUCH, lines to read just before each call that will switch pages,
 * outside the timed region (a diagnosis of which cold lines a switch pays
 * for), a sum of
 *   1  the buffer handle's first 448 bytes (read through the opaque
 *      pointer: the handle is larger than that)
 *   4  2 KiB of stack below the caller's frame
 *   8  the events layer's globals (cookie, buffer)
 * (the history's entries also use a 2: the control block's hot words, the
 * slot's second line, the FIFO cells and the generation words, read by a
 * copy of this probe built against the library's private headers, which
 * bench/ may not include: scripts/check-layers.)
 *
 * Where the times go: by default into an array of one per call (4 MB),
 * as bench/compare's tail part keeps them; with HO_STORE=hist in the
 * environment, an ordinary call's time goes into a histogram of one bucket
 * per tick (the few lines of common values stay in the L1) and only the
 * special calls' into small arrays. The difference is the harness's own
 * stores: a 4-byte store a call through 4 MB misses the cache every 16th
 * call, and a switch's first locked instruction waits for the store buffer
 * to drain, that miss included.
 *
 * Build (after `cmake --build build`):
 *   gcc -O2 -Iinclude -Ibench/cmp bench/probes/handover.c bench/cmp/cmp_rt_events.c \
 *       build/lib/libringtrace.a -lpthread -o build/handover
 * Run:
 *   taskset -c 1 build/handover discard 128m /dev/shm/ho
 *   taskset -c 1 build/handover overwrite 4m /dev/shm/ho2
 *   taskset -c 1 build/handover overwrite 4m /dev/shm/ho3 16384     (16 KiB pages)
 *   taskset -c 1 build/handover overwrite 4m /dev/shm/ho4 65536 1   (handle touched)
 *   HO_STORE=hist taskset -c 1 build/handover overwrite 4m /dev/shm/ho5
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

static volatile uint64_t ho_sink;

/* Read the lines TOUCH names (see the top), untimed. */
static void ho_touch(int touch, const ringtrace_rb *rb)
{
	uint64_t x = 0;
	if (touch & 1)
		for (int o = 0; o < 448; o += 64)
			x += *(const volatile char *)((const char *)rb + o);
	if (touch & 4) {
		char stack[2048];
		memset(stack, 1, sizeof(stack));
		__asm__ volatile("" ::"r"(stack) : "memory");
	}
	if (touch & 8)
		x += __atomic_load_n(&ringtrace_events_cookie_, __ATOMIC_RELAXED) +
		     (uintptr_t)__atomic_load_n(&ringtrace_events_rb_, __ATOMIC_RELAXED);
	ho_sink = x;
}

#define HO_N 1000000u
#define HO_WARMUP 50000u
#define HO_SLOW_CALL 150u /* ticks: ~61 ns at 2.4 GHz, the p99.9 region */
#define HO_BUCKETS 65536u /* HO_STORE=hist: one a tick; longer calls in the last */

static int ho_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Starts the session the arguments describe; 0, or 1 when it could not. */
static int ho_start(int argc, char **argv, size_t *poolp, int *touch)
{
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
	*poolp = pool;
	if (argc > 4)
		c.page_size = strtoull(argv[4], NULL, 10);
	*touch = argc > 5 ? atoi(argv[5]) : 0;
	if (ringtrace_session_start(&c) < 0) {
		fprintf(stderr, "handover: %s\n", ringtrace_last_error());
		return 1;
	}
	return 0;
}

/* HO_STORE=hist: lays the calls out as the array would have them, for the same
 * report: each hand-over followed by its next call, the warm-ups, then the
 * others (the order of these does not matter). */
static void ho_lay_out(uint32_t *t, uint8_t *ho, const uint32_t *sp, uint32_t nsp,
		       const uint32_t *wus, uint32_t nwus, const uint32_t *hist)
{
	uint32_t i = 0;
	for (uint32_t k = 0; k < nsp; k++, i++) {
		t[i] = sp[k];
		ho[i] = k % 2 == 0 ? 1 : 0;
	}
	for (uint32_t k = 0; k < nwus; k++, i++) {
		t[i] = wus[k];
		ho[i] = 2;
	}
	for (uint32_t v = 0; v < HO_BUCKETS; v++)
		for (uint32_t k = 0; k < hist[v] && i < HO_N; k++, i++) {
			t[i] = v;
			ho[i] = 0;
		}
}

/* The distribution of all calls, of the hand-overs, the warm-ups, the calls after
 * a hand-over and the others; 0, or 1 when out of memory. */
static int ho_report(uint32_t *t, const uint8_t *ho, const char *mode, size_t pool,
		     size_t page_size, int touch, int use_hist)
{
	uint32_t *at = calloc(HO_N, sizeof(*at)), *other = calloc(HO_N, sizeof(*other));
	uint32_t *after = calloc(HO_N, sizeof(*after)), *wu = calloc(HO_N, sizeof(*wu));
	if (!at || !other || !after || !wu)
		return 1;
	uint32_t nat = 0, nother = 0, slow_other = 0, nafter = 0, nwu = 0;
	for (uint32_t i = 0; i < HO_N; i++) {
		if (ho[i] == 1)
			at[nat++] = t[i];
		else if (ho[i] == 2)
			wu[nwu++] = t[i];
		else
			other[nother++] = t[i];
		if (!ho[i] && i && ho[i - 1] == 1)
			after[nafter++] = t[i];
		slow_other += !ho[i] && t[i] > HO_SLOW_CALL;
	}
	qsort(after, nafter, sizeof(*after), ho_cmp);
	qsort(wu, nwu, sizeof(*wu), ho_cmp);
	qsort(at, nat, sizeof(*at), ho_cmp);
	qsort(other, nother, sizeof(*other), ho_cmp);
	/* All calls together, as bench/compare's tail part reports them. */
	qsort(t, HO_N, sizeof(*t), ho_cmp);
	printf("%s, pool %zu bytes, pages of %zu, touch %d, times kept in %s: %u calls (ticks, the "
	       "timer's own cost included)\n",
	       mode, pool, page_size, touch, use_hist ? "a histogram" : "an array", HO_N);
	printf("all calls: median %u, p99 %u, p99.9 %u, p99.99 %u, max %u\n", t[HO_N / 2],
	       t[(uint64_t)HO_N * 99 / 100], t[(uint64_t)HO_N * 999 / 1000],
	       t[(uint64_t)HO_N * 9999 / 10000], t[HO_N - 1]);
	if (nat)
		printf("hand-overs: %u, p10 %u, median %u, p90 %u, max %u\n", nat, at[nat / 10],
		       at[nat / 2], at[(uint64_t)nat * 9 / 10], at[nat - 1]);
	if (nwu)
		printf("warm-ups: %u, p10 %u, median %u, p90 %u, max %u\n", nwu, wu[nwu / 10],
		       wu[nwu / 2], wu[(uint64_t)nwu * 9 / 10], wu[nwu - 1]);
	if (nafter)
		printf("the call after each hand-over: median %u, p90 %u, max %u\n",
		       after[nafter / 2], after[(uint64_t)nafter * 9 / 10], after[nafter - 1]);
	if (nother)
		printf("other calls: %u, median %u, p99 %u, p99.9 %u, p99.99 %u, max %u; "
		       "%u (%.3f%%) slower than %u\n",
		       nother, other[nother / 2], other[(uint64_t)nother * 99 / 100],
		       other[(uint64_t)nother * 999 / 1000], other[(uint64_t)nother * 9999 / 10000],
		       other[nother - 1], slow_other, 100.0 * slow_other / nother, HO_SLOW_CALL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 6) {
		fprintf(stderr,
			"usage: handover discard|overwrite POOL_BYTES[k|m] DIR [PAGE [TOUCH]]\n");
		return 2;
	}
	size_t pool;
	int touch;
	if (ho_start(argc, argv, &pool, &touch))
		return 1;
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
	/* HO_STORE=hist: ordinary calls counted in hist, the others kept in
	 * order in sp (each hand-over, then the call after it) and wus. */
	const char *store = getenv("HO_STORE");
	int use_hist = store && !strcmp(store, "hist");
	uint32_t *hist = mmap(NULL, HO_BUCKETS * sizeof(*hist), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint32_t *sp = calloc(HO_N / 64, sizeof(*sp)), *wus = calloc(HO_N / 64, sizeof(*wus));
	if (hist == MAP_FAILED || !sp || !wus)
		return 1;
	uint32_t nsp = 0, nwus = 0, prev = 0;
	unsigned aux;
	const char *pg = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->page : NULL;
	uint32_t lim = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->limit : 0;
	const ringtrace_rb *rb = ringtrace_session_buffer();
	size_t page_size = ringtrace_rb_page_size(rb);
	for (uint32_t i = 0; i < HO_N; i++) {
		const struct ringtrace_wtls_ *lt = ringtrace_thr_.last_t;
		/* (this call switches if its record does not fit the page) */
		if (touch && lt && lt->off + RINGTRACE_EV_SPAN_(sizeof(int)) > lt->end)
			ho_touch(touch, rb);
		_mm_lfence();
		uint64_t a = __rdtsc();
		trace_cmp_int((int)i);
		uint64_t b = __rdtscp(&aux);
		_mm_lfence();
		uint32_t d = (uint32_t)(b - a);
		const char *now = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->page : NULL;
		uint32_t nlim = ringtrace_thr_.last_t ? ringtrace_thr_.last_t->limit : 0;
		/* 1: a hand-over; 2: the warm-up (same page, limit moved to its end) */
		uint32_t cls = now != pg ? 1 : nlim != lim ? 2 : 0;
		pg = now;
		lim = nlim;
		if (!use_hist) {
			t[i] = d;
			ho[i] = (uint8_t)cls;
		} else if (cls == 2 && nwus < HO_N / 64) {
			wus[nwus++] = d;
		} else if ((cls == 1 || prev == 1) && nsp < HO_N / 64) {
			sp[nsp++] = d; /* (a hand-over, or the call after one) */
		} else {
			hist[d < HO_BUCKETS ? d : HO_BUCKETS - 1]++;
		}
		prev = cls;
	}
	if (use_hist)
		ho_lay_out(t, ho, sp, nsp, wus, nwus, hist);
	if (ringtrace_session_stop() < 0)
		fprintf(stderr, "handover: stop: %s\n", ringtrace_last_error());
	return ho_report(t, ho, argv[1], pool, page_size, touch, use_hist);
}
