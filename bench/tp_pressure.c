/*
 * bench/tp_pressure.c - `ringtrace-bench tp --memcpy`: what a disabled
 * tracepoint costs when the loop around it works the memory.
 *
 * The Linux Kernel Markers microbenchmark timed a disabled marker in a
 * tight loop and in a loop of 4 KiB memcpy: in the tight loop the
 * load-and-branch check was as cheap as an immediate value, in the memcpy
 * loop it cost measurably more, the marker's load competing with the copy
 * for the memory system. ringtrace's call site is such a check
 * (one load of the event's `state` word, one predicted branch), so it is
 * timed here in the same kinds of loop, each against the same loop
 * without the tracepoint:
 *
 *   tight loop            nothing but the tracepoint (as `tp`'s lines)
 *   memcpy 4 KiB          a 4 KiB memcpy between two fixed buffers (in L1)
 *   memcpy sweeping 8 MiB the 4 KiB copies walk through 8 MiB of source
 *                         and 8 MiB of destination, so that the copies
 *                         miss the L1 and L2 and stream from beyond
 *   ... state line flushed (x86) the same, and after each copy the state
 *                         word's cache line is flushed (clflush, in both
 *                         loops): every check loads it from memory, the
 *                         worst a check can meet
 *
 * Method: the two loops alternate in chunks of ~1 ms, in pairs of rounds
 * (plain then tracepoint, tracepoint then plain), and each pair gives the
 * difference of their mean ns per iteration: the machine's drift cancels
 * within a round, and what the first loop of a round leaves in the caches
 * for the second (in the sweeping cases, by far the larger effect)
 * cancels within the pair. Rounds go
 * on until the distribution-free 95% interval of the median difference
 * (order statistics n/2 -+ 0.98 sqrt(n)) is no wider than the resolution
 * (0.1 ns: two costs 0.1 ns apart can be told apart), or the case has run
 * its time; a case that stops unresolved says so.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_common.h"
#include "bench_events.h"
#include "tp_pressure.h"

#define TPP_COPY 4096u
#define TPP_SWEEP (8u << 20)
#define TPP_CHUNK_NS 1000000.0
#define TPP_MIN_ROUNDS 30 /* pairs of rounds */
#define TPP_MAX_ROUNDS 100000

#define TPP_KEEP(i) __asm__ __volatile__("" : "+r"(i))

static uint8_t *tpp_src, *tpp_dst;
static size_t tpp_mask; /* the copies' offsets wrap at mask + 1 */

#if defined(__x86_64__)
#define TPP_CAN_FLUSH 1
static inline void tpp_flush_state(void)
{
	__builtin_ia32_clflush((const void *)&ringtrace_event_bench_int.state);
}
#else
#define TPP_CAN_FLUSH 0
static inline void tpp_flush_state(void)
{
}
#endif

/* The loops: with or without the tracepoint, flushing its line or not. */
#define TPP_COPY_LOOP(fname, with_tp, flush)                              \
	static __attribute__((noinline)) void fname(uint64_t n)           \
	{                                                                 \
		uint8_t *src = tpp_src, *dst = tpp_dst;                   \
		size_t mask = tpp_mask;                                   \
		for (uint64_t i = 0; i < n; i++) {                        \
			if (with_tp)                                      \
				trace_bench_int((int)i);                  \
			size_t o = ((size_t)i * TPP_COPY) & mask;         \
			memcpy(dst + o, src + o, TPP_COPY);               \
			if (flush)                                        \
				tpp_flush_state();                        \
			__asm__ __volatile__("" : : "r"(dst) : "memory"); \
			TPP_KEEP(i);                                      \
		}                                                         \
	}
TPP_COPY_LOOP(tpp_copy, 0, 0)
TPP_COPY_LOOP(tpp_copy_tp, 1, 0)
TPP_COPY_LOOP(tpp_copy_fl, 0, 1)
TPP_COPY_LOOP(tpp_copy_fl_tp, 1, 1)

static __attribute__((noinline)) void tpp_tight(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		TPP_KEEP(i);
}

static __attribute__((noinline)) void tpp_tight_tp(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_int((int)i);
		TPP_KEEP(i);
	}
}

typedef void (*tpp_fn)(uint64_t n);

static const struct tpp_case {
	const char *name;
	tpp_fn plain, with_tp;
	size_t span; /* bytes the copies walk through */
	int flushes;
} tpp_cases[] = {
	{"tight loop", tpp_tight, tpp_tight_tp, TPP_COPY, 0},
	{"memcpy 4 KiB", tpp_copy, tpp_copy_tp, TPP_COPY, 0},
	{"memcpy 4 KiB sweeping 8 MiB", tpp_copy, tpp_copy_tp, TPP_SWEEP, 0},
	{"memcpy 4 KiB sweeping 8 MiB, state line flushed", tpp_copy_fl, tpp_copy_fl_tp, TPP_SWEEP,
	 1},
};

static double tpp_time(tpp_fn fn, uint64_t n)
{
	uint64_t t0 = bench_now_ns();
	fn(n);
	return (double)(bench_now_ns() - t0) / (double)n;
}

static int tpp_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of d[0..n) and its 95% interval, from a sorted copy s. */
static void tpp_interval(const double *d, double *s, int n, double *med, double *lo, double *hi)
{
	memcpy(s, d, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), tpp_cmp);
	double h = 0.98 * sqrt((double)n);
	int l = (int)floor(n / 2.0 - h), u = (int)ceil(n / 2.0 + h);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	*lo = s[l < 0 ? 0 : l];
	*hi = s[u > n - 1 ? n - 1 : u];
}

struct tpp_result {
	int rounds;
	uint64_t chunk;
	double loop, med, lo, hi, p10, p90;
};

/* Alternates the case's two loops until resolved or out of time. */
static int tpp_measure(const struct tpp_case *c, double seconds, double resolve, double *d,
		       double *a, double *s, struct tpp_result *res)
{
	tpp_mask = c->span - 1;
	c->plain(1000);
	c->with_tp(1000);
	double ns = tpp_time(c->plain, 10000);
	uint64_t chunk = (uint64_t)(TPP_CHUNK_NS / (ns > 0.01 ? ns : 0.01));
	chunk = chunk < 100 ? 100 : chunk;
	c->plain(chunk);
	c->with_tp(chunk);
	uint64_t end = bench_now_ns() + (uint64_t)(seconds * 1e9);
	int n = 0, resolved = 0;
	while (n < TPP_MAX_ROUNDS) {
		/* a pair of rounds, one in each order: what the first loop of a
		 * round leaves in the caches for the second cancels */
		double ta = tpp_time(c->plain, chunk);
		double tb = tpp_time(c->with_tp, chunk);
		tb += tpp_time(c->with_tp, chunk);
		ta += tpp_time(c->plain, chunk);
		a[n] = ta / 2;
		d[n++] = (tb - ta) / 2;
		if (n >= TPP_MIN_ROUNDS && n % 20 == 0) {
			tpp_interval(d, s, n, &res->med, &res->lo, &res->hi);
			if (res->hi - res->lo <= resolve) {
				resolved = 1;
				break;
			}
		}
		if (bench_now_ns() >= end && n >= TPP_MIN_ROUNDS)
			break;
	}
	tpp_interval(d, s, n, &res->med, &res->lo, &res->hi);
	res->p10 = s[(int)(0.1 * (n - 1) + 0.5)];
	res->p90 = s[(int)(0.9 * (n - 1) + 0.5)];
	res->rounds = 2 * n;
	res->chunk = chunk;
	res->loop = bench_median(a, (size_t)n);
	return resolved;
}

int tp_pressure_run(double seconds, double resolve_ns)
{
	size_t ncase = sizeof(tpp_cases) / sizeof(tpp_cases[0]);
	int status = 0;
	tpp_src = mmap(NULL, TPP_SWEEP, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	tpp_dst = mmap(NULL, TPP_SWEEP, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	double *d = malloc(sizeof(double) * TPP_MAX_ROUNDS);
	double *a = malloc(sizeof(double) * TPP_MAX_ROUNDS);
	double *s = malloc(sizeof(double) * TPP_MAX_ROUNDS);
	if (tpp_src == MAP_FAILED || tpp_dst == MAP_FAILED || !d || !a || !s) {
		fprintf(stderr, "ringtrace-bench tp: out of memory for the memcpy cases\n");
		status = 1;
		goto out;
	}
	memset(tpp_src, 0x5a, TPP_SWEEP);
	memset(tpp_dst, 0, TPP_SWEEP);
	printf("memcpy cases: a disabled tracepoint against the same loop without it, ~1 ms chunks\n"
	       "alternated; until the 95%% interval of the median difference is <= %.2f ns wide\n"
	       "or %g s per case\n",
	       resolve_ns, seconds);
	for (size_t k = 0; k < ncase; k++) {
		const struct tpp_case *c = &tpp_cases[k];
		struct tpp_result r;
		if (c->flushes && !TPP_CAN_FLUSH)
			continue;
		int ok = tpp_measure(c, seconds, resolve_ns, d, a, s, &r);
		printf("%s: loop %.2f ns; disabled tracepoint %+.3f ns [95%% %+.3f, %+.3f] "
		       "(%d rounds of %llu; per pair p10 %+.3f, p90 %+.3f)%s\n",
		       c->name, r.loop, fabs(r.med) < 0.0005 ? 0.0 : r.med, r.lo, r.hi, r.rounds,
		       (unsigned long long)r.chunk, r.p10, r.p90, ok ? "" : " NOT RESOLVED");
		fflush(stdout);
	}
out:
	if (tpp_src != MAP_FAILED && tpp_src)
		munmap(tpp_src, TPP_SWEEP);
	if (tpp_dst != MAP_FAILED && tpp_dst)
		munmap(tpp_dst, TPP_SWEEP);
	free(d);
	free(a);
	free(s);
	return status;
}
