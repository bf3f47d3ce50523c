/*
 * The trace clock.
 *
 * Timestamps are raw ticks of the cheapest clock that is monotonic and the
 * same on every CPU: the TSC on x86 when the CPU says it is invariant
 * (CPUID 0x80000007 EDX bit 8: constant rate, runs in every C-state), the
 * virtual counter on arm64. Reading it costs one instruction, a fraction
 * of a clock_gettime() call, so the write path never converts:
 * the buffer stores ticks and one calibration (frequency plus a point where
 * ticks and CLOCK_MONOTONIC were read together), and readers convert.
 *
 * Calibration brackets each TSC read between two clock_gettime() calls and
 * keeps the tightest bracket, at the start and ~20 ms later, which bounds
 * the frequency error to a few parts per million. Where no invariant TSC
 * exists (or RINGTRACE_CLOCK=monotonic is set) ticks are CLOCK_MONOTONIC
 * nanoseconds and the frequency is 1 GHz.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/base.h"

static struct rt_clock rt_clock_state;
static pthread_once_t rt_clock_once = PTHREAD_ONCE_INIT;
static int rt_clock_started;

uint64_t rt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int rt_have_invariant_counter(void)
{
	const char *env = rt_getenv("RINGTRACE_CLOCK");
	if (env && strcmp(env, "monotonic") == 0)
		return 0;
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#elif defined(__aarch64__)
	return 1;
#else
	return 0;
#endif
}

void rt_clock_sample(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	*ticks = 0; /* (the first try always sets both; the compiler cannot see it) */
	*ns = 0;
	for (int i = 0; i < 50; i++) {
		uint64_t a = rt_mono_ns();
		uint64_t t = 0;
		ringtrace_hw_ticks_(&t);
		uint64_t b = rt_mono_ns();
		if (b - a < best) {
			best = b - a;
			*ticks = t;
			*ns = a + (b - a) / 2;
		}
	}
}

static void rt_clock_init(void)
{
	struct rt_clock *c = &rt_clock_state;
	__atomic_store_n(&rt_clock_started, 1, __ATOMIC_RELAXED);
	if (!rt_have_invariant_counter()) {
		c->is_tsc = 0;
		c->freq = 1000000000ull;
		c->base_ticks = 0;
		c->base_ns = 0;
		return;
	}
#if defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	c->is_tsc = 1;
	c->freq = f;
	rt_clock_sample(&c->base_ticks, &c->base_ns);
	return;
#else
	uint64_t t0, n0, t1, n1;
	rt_clock_sample(&t0, &n0);
	struct timespec d = {0, 20 * 1000 * 1000};
	nanosleep(&d, NULL);
	rt_clock_sample(&t1, &n1);
	if (t1 <= t0 || n1 <= n0) {
		c->is_tsc = 0;
		c->freq = 1000000000ull;
		return;
	}
	c->is_tsc = 1;
	c->freq = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull / (n1 - n0));
	c->base_ticks = t1;
	c->base_ns = n1;
#endif
}

int64_t rt_clock_realtime_offset(void)
{
	/* The realtime read bracketed by two monotonic reads, the narrowest
	 * bracket of a few kept: the offset's error is half that bracket
	 * (tens of ns) rather than whatever a preemption between two bare
	 * reads would add. */
	uint64_t best = UINT64_MAX;
	int64_t off = 0;
	for (int i = 0; i < 8; i++) {
		struct timespec rt;
		uint64_t a = rt_mono_ns();
		clock_gettime(CLOCK_REALTIME, &rt);
		uint64_t b = rt_mono_ns();
		if (b - a < best) {
			best = b - a;
			off = ((int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec) -
			      (int64_t)(a + (b - a) / 2);
		}
	}
	return off;
}

const struct rt_clock *rt_clock_get(void)
{
	pthread_once(&rt_clock_once, rt_clock_init);
	return &rt_clock_state;
}

int rt_clock_calibrated(void)
{
	return __atomic_load_n(&rt_clock_started, __ATOMIC_RELAXED);
}

uint64_t rt_clock_to_ns(const struct rt_clock *c, uint64_t ticks)
{
	if (c->freq == 0)
		return ticks; /* (never for a calibrated clock; the reader refuses it) */
	__int128 d = (__int128)ticks - (__int128)c->base_ticks;
	__int128 ns = (__int128)c->base_ns + d * 1000000000 / (__int128)c->freq;
	if (ns < 0)
		return 0;
	if (ns > (__int128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)ns;
}
