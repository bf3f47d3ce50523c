/*
 * bench/bench_common.h - helpers shared by the ringtrace-bench subcommands:
 * the clock, CPU pinning, medians, option parsing and the "cheapest event"
 * floor.
 */
#ifndef RINGTRACE_BENCH_COMMON_H
#define RINGTRACE_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Sleep this many microseconds (restarted on EINTR). */
void bench_sleep_us(unsigned us);

/* Pin the calling thread to `cpu` (-1: no-op). 0 or an errno value. */
int bench_pin_self(int cpu);

/*
 * The CPUs this process may run on, in increasing order, into cpus[0..max-1].
 * Returns how many (0 if sched_getaffinity failed).
 */
int bench_usable_cpus(int *cpus, int max);

/* Median of n values (sorts them); NAN values are ignored; NAN if none. */
double bench_median(double *v, size_t n);

/* Parse a decimal unsigned integer in [min, max]: 0, or -1 if invalid. */
int bench_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Parse a size in bytes, > 0, with an optional k/m/g (KiB, MiB...) suffix. */
int bench_parse_size(const char *s, size_t *out);
/* Parse a number of seconds, 0 < v <= max: 0, or -1 if invalid. */
int bench_parse_seconds(const char *s, double max, double *out);

/* "ringtrace-bench CMD: <fmt with arg>" and a hint on stderr; BENCH_EXIT_USAGE. */
int bench_usage_error(const char *cmd, const char *fmt, const char *arg);
/* The usage error for getopt_long's ':' (missing value) or '?' (unknown option). */
int bench_getopt_error(const char *cmd, int c, char **argv);

/*
 * "cheapest event": a floor for any tracer. Per iteration one timestamp
 * read (rdtsc on x86, else clock_gettime), one 16-byte store (timestamp +
 * payload) into a 64 KiB wrapping buffer and a release store of the new
 * position; ns per iteration, median of 5 samples of 2M iterations after a
 * warm-up.
 *
 * bench_cheapest_here() measures on the calling thread (wherever it is
 * pinned); bench_measure_cheapest() on a new thread pinned to `cpu`
 * (-1: anywhere).
 */
double bench_cheapest_here(void);
double bench_measure_cheapest(int cpu);

#endif /* RINGTRACE_BENCH_COMMON_H */
