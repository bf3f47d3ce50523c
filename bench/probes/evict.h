/*
 * bench/probes/evict.h - the timed loop of the eviction probe (evict.c),
 * one per case, each in the translation unit of its tracer.
 *
 * EVICT_LOOP(prefix, emit) defines prefix_evict(first, n, every): the
 * ns per event of n events `emit(i)`, with evict_touch() run before every
 * `every`-th event (0: never; the loop is then bench/cmp/cmp_pair.h's
 * micro loop, the same body and the same opaque counter).
 */
#ifndef EVICT_H
#define EVICT_H

#include <stdint.h>

#include "cmp.h"

/* Reads the eviction buffer, one load per line (evict.c). */
void evict_touch(void);

#define EVICT_LOOP(prefix, emit)                                                    \
	__attribute__((noinline)) double prefix##_evict(uint64_t first, uint64_t n, \
							uint64_t every)             \
	{                                                                           \
		uint64_t t0 = cmp_now_ns();                                         \
		if (!every) {                                                       \
			for (uint64_t i = first; i < first + n; i++) {              \
				emit((int)i);                                       \
				CMP_KEEP(i);                                        \
			}                                                           \
		} else {                                                            \
			for (uint64_t i = first; i < first + n;) {                  \
				evict_touch();                                      \
				for (uint64_t e = i + every; i < e; i++) {          \
					emit((int)i);                               \
					CMP_KEEP(i);                                \
				}                                                   \
			}                                                           \
		}                                                                   \
		return (double)(cmp_now_ns() - t0) / (double)n;                     \
	}

/* evict_dpdk.c: DPDK's event (cmp_trace_ev, inline) in that loop */
double dpdk_evict(uint64_t first, uint64_t n, uint64_t every);

#endif /* EVICT_H */
