/*
 * bench/probes/call_steps.c - what decides a call's p99.9 on a counter
 * that moves in steps?
 *
 * A probe for the per-call tail target (docs/benchmarks-history.md,
 * "a call's p99.9 in counter steps"). bench/compare's tail part times each call
 * between `lfence; rdtsc` and `rdtscp; lfence`. On this machine (a
 * virtual TSC) a read of the counter costs about as much as the counter's
 * step (~21 ticks, 10 ns), so every region measures a whole number of
 * steps and a call's p99.9 is one step or two: two as soon as more than
 * 0.1% of its calls end one step later. This probe times, in the same
 * way, calls that differ by one kind of work at a time and prints the
 * share of calls at each step, so that one can see which work moves calls
 * to the next step:
 *
 *   empty     no call: the timer alone
 *   tsc       a function (not inlined) that reads the TSC and stores a
 *             16-byte record into a ring in memory and its offset: about
 *             what DPDK's trace point does (it is inlined there)
 *   tsc+st    the same and three more stores, each to another line
 *   tsc+ld    the same and three more loads (L1 hits, other lines) whose
 *             values go into the record
 *   tsc+rmw   the same and a counter increment (load, add, store) and a
 *             release store to another line
 *   ringtrace trace_cmp_int() (bench/compare's event) in an overwrite
 *             session of 4 MiB, as bench/compare's tail part runs it
 *
 * and, first, what one read of the counter costs: 1M `rdtsc` and 1M
 * `rdtscp` back to back.
 *
 * Build (after `cmake --build build`):
 *   gcc -O2 -Iinclude -Ibench/cmp bench/probes/call_steps.c bench/cmp/cmp_rt_events.c \
 *       build/lib/libringtrace.a -lpthread -o build/call_steps
 * Run (x86 only):
 *   taskset -c 1 build/call_steps /dev/shm/cs
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <ringtrace/session.h>

#include "cmp_rt_events.h"
#include "cmp_tick.h"

#define CS_N 1000000u
#define CS_ROUNDS 3
#define CS_MAXT 4096u

/*
 * The minimal tracer: a ring of 16-byte records and its offset. What it
 * writes is summed and printed at the end: a ring that nothing reads lets the
 * compiler drop the records' stores, and the "tracer" was then a clock
 * read and an offset update (as this probe's first version measured).
 */
static uint64_t cs_ring[1u << 16];
static uint32_t cs_off;
static uint64_t cs_a[8] __attribute__((aligned(64))), cs_b[8] __attribute__((aligned(64)));
static uint64_t cs_c[8] __attribute__((aligned(64))), cs_cnt __attribute__((aligned(64)));
static uint32_t cs_flag __attribute__((aligned(64)));

static inline void cs_record(uint64_t t, int v)
{
	uint32_t o = cs_off;
	cs_ring[o] = t;
	cs_ring[o + 1] = (uint64_t)(uint32_t)v;
	cs_off = (o + 2) & ((1u << 16) - 1);
}

static __attribute__((noinline)) void cs_tsc(int v)
{
	cs_record(__rdtsc(), v);
}

static __attribute__((noinline)) void cs_tsc_st(int v)
{
	uint64_t t = __rdtsc();
	cs_record(t, v);
	cs_a[0] = t;
	cs_b[0] = (uint64_t)v;
	cs_c[0] = t;
}

static __attribute__((noinline)) void cs_tsc_ld(int v)
{
	uint64_t t = __rdtsc();
	cs_record(t + cs_a[1] + cs_b[1] + cs_c[1], v);
}

static __attribute__((noinline)) void cs_tsc_rmw(int v)
{
	uint64_t t = __rdtsc();
	cs_record(t, v);
	cs_cnt++;
	__atomic_store_n(&cs_flag, (uint32_t)v, __ATOMIC_RELEASE);
}

static void cs_call(int kind, int v)
{
	switch (kind) {
	case 1:
		cs_tsc(v);
		break;
	case 2:
		cs_tsc_st(v);
		break;
	case 3:
		cs_tsc_ld(v);
		break;
	case 4:
		cs_tsc_rmw(v);
		break;
	case 5:
		trace_cmp_int(v);
		break;
	}
}

static const char *const cs_names[] = {"empty", "tsc", "tsc+st", "tsc+ld", "tsc+rmw", "ringtrace"};

/* One case: CS_N calls timed one by one into a histogram (the times stay
 * in a few L1 lines: no store of the harness misses the cache). */
static void cs_case(int kind, uint32_t *h)
{
	memset(h, 0, CS_MAXT * sizeof(*h));
	for (uint32_t i = 0; i < CS_N; i++) {
		uint64_t a, b;
		/* (the switch is outside the timed region: one call each) */
		if (kind == 0) {
			a = cmp_tick_begin();
			b = cmp_tick_end();
		} else if (kind == 5) {
			a = cmp_tick_begin();
			trace_cmp_int((int)i);
			b = cmp_tick_end();
		} else {
			a = cmp_tick_begin();
			cs_call(kind, (int)i);
			b = cmp_tick_end();
		}
		uint64_t d = b - a;
		h[d < CS_MAXT ? d : CS_MAXT - 1]++;
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: call_steps DIR   (a session's output directory)\n");
		return 2;
	}
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);

	/* What a read of the counter costs, back to back. */
	unsigned aux;
	uint64_t t0 = __rdtsc();
	for (int i = 0; i < 1000000; i++)
		__asm__ __volatile__("rdtsc" : : : "rax", "rdx");
	uint64_t t1 = __rdtsc();
	for (int i = 0; i < 1000000; i++)
		__rdtscp(&aux);
	uint64_t t2 = __rdtsc();
	printf("back to back: rdtsc %.1f ticks each, rdtscp %.1f ticks each\n",
	       (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6);

	struct ringtrace_session_config c;
	ringtrace_session_config_init(&c);
	c.output_dir = argv[1];
	c.events = "cmp_int";
	c.mode = RINGTRACE_RB_OVERWRITE;
	c.pool_size = 4u << 20;
	if (ringtrace_session_start(&c) < 0) {
		fprintf(stderr, "call_steps: %s\n", ringtrace_last_error());
		return 1;
	}
	for (uint32_t i = 0; i < 50000; i++)
		trace_cmp_int((int)i);

	static uint32_t h[CS_MAXT];
	printf("%u calls a case, %d rounds; share of calls at each region length (ticks, the "
	       "timer's own included), and the mean\n",
	       CS_N, CS_ROUNDS);
	for (int r = 0; r < CS_ROUNDS; r++)
		for (int k = 0; k <= 5; k++) {
			cs_case(k, h);
			double sum = 0;
			uint64_t n = 0;
			printf("  %-10s", cs_names[k]);
			for (uint32_t v = 0; v < CS_MAXT; v++) {
				n += h[v];
				sum += (double)v * h[v];
				/* (values held by at least 0.005% of the calls) */
				if (v < 400 && h[v] * 20000ull >= CS_N)
					printf(" %u:%.3f%%", v, 100.0 * h[v] / CS_N);
			}
			printf("   mean %.2f\n", sum / (double)n);
		}
	uint64_t sum = cs_cnt + cs_flag;
	for (uint32_t i = 0; i < (1u << 16); i++)
		sum += cs_ring[i];
	for (int i = 0; i < 8; i++)
		sum += cs_a[i] + cs_b[i] + cs_c[i];
	printf("(the minimal tracers' records, summed: %llu)\n", (unsigned long long)sum);
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "call_steps: stop: %s\n", ringtrace_last_error());
		return 1;
	}
	return 0;
}
