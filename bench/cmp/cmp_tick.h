/*
 * bench/cmp/cmp_tick.h - how bench/compare times one call (its tail
 * part: cmp_harness.h), for the probes in bench/probes too, so that they
 * time a call exactly as the harness does.
 */
#ifndef CMP_TICK_H
#define CMP_TICK_H

#include <stdint.h>

#include "cmp.h"

/*
 * The counter is read with fences on both sides of the call so that the
 * call's own instructions, and only they, fall between the two reads:
 * `lfence; rdtsc` reads the counter once every earlier instruction has
 * completed locally (the previous iteration's bookkeeping cannot leak in),
 * `rdtscp; lfence` reads it once the call's instructions have executed and
 * keeps later ones from starting before the read. Without the fences an
 * out-of-order core overlaps a cheap call with the reads themselves and a
 * per-call figure means little. The "memory" clobbers are the compiler
 * barriers: no load or store of the call moves out of the region. What the
 * fences and the two reads cost is measured as an empty region in the same
 * way and subtracted (cmp_tail_calibrate). The counter is tracer-
 * independent: no tracer's clock code is used to time the tracers.
 *
 * Where there is no TSC (not x86), the clock the harness uses elsewhere
 * (CLOCK_MONOTONIC) stands in, one tick per ns.
 */
#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t cmp_tick_begin(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t cmp_tick_end(void)
{
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	(void)aux;
	return ((uint64_t)hi << 32) | lo;
}
/* unfenced, back to back: how finely the counter itself advances */
static inline uint64_t cmp_tick_raw(void)
{
	return __builtin_ia32_rdtsc();
}
#define CMP_TICK_NAME "TSC (lfence;rdtsc ... rdtscp;lfence)"
#else
static inline uint64_t cmp_tick_begin(void)
{
	__asm__ __volatile__("" : : : "memory");
	uint64_t t = cmp_now_ns();
	__asm__ __volatile__("" : : : "memory");
	return t;
}
#define cmp_tick_end cmp_tick_begin
#define cmp_tick_raw cmp_now_ns
#define CMP_TICK_NAME "CLOCK_MONOTONIC (no TSC)"
#endif

#endif /* CMP_TICK_H */
