/* Internal helpers shared by the library's source files (not installed). */
#ifndef RINGTRACE_COMMON_INTERNAL_H
#define RINGTRACE_COMMON_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "ringtrace/ring.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define rt_likely(x) __builtin_expect(!!(x), 1)
#define rt_unlikely(x) __builtin_expect(!!(x), 0)
#define RT_ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* Record a message for ringtrace_last_error() and return -code. */
RT_HIDDEN int rt_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
RT_HIDDEN void rt_error_clear(void);

/* ---- events registry (src/event/registry.c), for the recorder ---- */
struct ringtrace_rb;
RT_HIDDEN int rt_events_set_buffer(struct ringtrace_rb *rb, int check_env_rules);
RT_HIDDEN void rt_events_report_unmatched(void);
RT_HIDDEN extern const int rt_session_linked;
/* The `filter` and `trigger` lines of the schema block (src/event/control.c). */
RT_HIDDEN void rt_ctl_write_schema(FILE *f, uint32_t nevents);
/* Percent-encoding of docs/format.md section 7 (src/ctf/metadata.c). */
RT_HIDDEN void rt_pct(FILE *f, const char *s);

/* ---- the recorder's files (src/record/session.c), for `ringtrace recover` ---- */
/* DIR/stream_N: the file of stream N in a trace directory. */
RT_HIDDEN void rt_stream_path(char *buf, size_t n, const char *dir, uint64_t stream);
/* write() all of buf, retrying on EINTR and short writes: 0 or -errno. */
RT_HIDDEN int rt_write_all(int fd, const void *buf, size_t len);

/* ---- clock (src/common/clock.c) ---- */
struct rt_clock {
	int is_tsc;           /* 1: ticks are TSC cycles; 0: CLOCK_MONOTONIC ns */
	uint64_t freq;        /* ticks per second */
	uint64_t base_ticks;  /* a calibration point: ticks ... */
	uint64_t base_ns;     /* ... and CLOCK_MONOTONIC ns at the same instant */
};

/* Calibrate once per process (thread-safe); returns the process clock. */
RT_HIDDEN const struct rt_clock *rt_clock_get(void);
RT_HIDDEN uint64_t rt_mono_ns(void);
RT_HIDDEN uint64_t rt_clock_to_ns(const struct rt_clock *c, uint64_t ticks);

/* The hardware counter; only meaningful where rt_clock_get()->is_tsc. */
static inline uint64_t rt_hw_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

static inline uint64_t rt_ticks(int is_tsc)
{
#if defined(__x86_64__) || defined(__i386__)
	if (rt_likely(is_tsc))
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	if (rt_likely(is_tsc)) {
		uint64_t v;
		__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#else
	(void)is_tsc;
#endif
	return rt_mono_ns();
}

#endif
