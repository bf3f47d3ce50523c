/*
 * bench/cmp/cmp_pair.h - the timed loops of cmp-pair, one set per tracer.
 *
 * CMP_PAIR_LOOPS(prefix, emit) defines prefix_micro(first, n) and
 * prefix_close(first, n), which return the ns per iteration of the same
 * loops as cmp_harness.h's (same body, same opaque counter), with `emit`
 * as the event. Each tracer's loops are compiled in a translation unit of
 * their own (cmp_pair.c: ringtrace and no tracer; cmp_pair_dpdk.c: DPDK),
 * all with the same flags, so that each call site is inline in its loop
 * as a user of that tracer writes it.
 */
#ifndef CMP_PAIR_H
#define CMP_PAIR_H

#include <unistd.h>

#include "cmp.h"

#define CMP_PAIR_LOOPS(prefix, emit)                                                \
	__attribute__((noinline)) double prefix##_micro(uint64_t first, uint64_t n) \
	{                                                                           \
		uint64_t t0 = cmp_now_ns();                                         \
		for (uint64_t i = first; i < first + n; i++) {                      \
			emit((int)i);                                               \
			CMP_KEEP(i);                                                \
		}                                                                   \
		return (double)(cmp_now_ns() - t0) / (double)n;                     \
	}                                                                           \
	__attribute__((noinline)) double prefix##_close(uint64_t first, uint64_t n) \
	{                                                                           \
		uint64_t t0 = cmp_now_ns();                                         \
		for (uint64_t i = first; i < first + n; i++) {                      \
			close(-1);                                                  \
			emit((int)i);                                               \
		}                                                                   \
		return (double)(cmp_now_ns() - t0) / (double)n;                     \
	}

/* cmp_pair_dpdk.c */
int cmp_pair_dpdk_init(int cpu, const char *dir, uint64_t bufsz);
uint32_t cmp_pair_dpdk_buffer_len(void);
int cmp_pair_dpdk_finish(void);
double dpdk_micro(uint64_t first, uint64_t n);
double dpdk_close(uint64_t first, uint64_t n);

#endif /* CMP_PAIR_H */
