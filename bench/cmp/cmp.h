/*
 * bench/cmp/cmp.h - options and result of a cmp-<tracer> program
 * (see cmp_harness.h).
 */
#ifndef CMP_H
#define CMP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* also set by CMake: DPDK's -include rte_config.h comes first */
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cmp_opts {
	const char *what; /* micro | close | latency | tail */
	uint64_t n, warmup;
	int cpu;
	const char *mode; /* discard | overwrite */
	int overwrite;
	int off;          /* tracer present, tracepoint disabled */
	const char *dir;  /* trace output directory */
	const char *file; /* target of write() (ftrace, /dev/null) */
	uint64_t buffer;  /* bytes; 0: the backend's choice */
	const char *wait; /* FIFO to wait on before the warm-up */
	unsigned interval_us;
	int prio;
	const char *hist; /* tail: where to write the distribution */
	unsigned threads; /* micro: writer threads (1: the main thread alone) */
};

struct cmp_result {
	double ns;     /* per event / call / wake-up; --threads: mean of the writers' */
	double ns_max; /* --threads: the slowest writer's ns per event */
	double lat_min, lat_avg, lat_max;
	uint64_t expected;      /* events that a lossless tracer keeps */
	int64_t recorded, lost; /* -1: not known to the program */
	char note[200];
	/* tail: calibrated per-call quantiles (ns), the index (from the first
	 * timed call) of the slowest, the timer's own cost that was
	 * subtracted, the counter's step and frequency */
	double p50, p99, p999, p9999, tmax;
	uint64_t tail_max_at;
	double timer_ns, step_ns, tsc_ghz;
};

static void cmp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, unused));
static void cmp_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("cmp: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Pin the calling thread to one CPU. */
static void cmp_pin(int cpu) __attribute__((unused));
static void cmp_pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s) != 0)
		cmp_die("cannot pin to CPU %d: %s", cpu, strerror(errno));
}

/* The counter is opaque to the compiler after this: the loop stays a loop. */
#define CMP_KEEP(i) __asm__ __volatile__("" : "+r"(i))

static inline uint64_t cmp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * ringtrace's own accounting of a session, from the `stat` lines of the
 * metadata it wrote in dir at stop: hit (committed), missed (dropped),
 * overrun (overwritten by the flight recorder). Exits if unreadable.
 */
static void cmp_ringtrace_stats(const char *dir, unsigned long long *hit,
				unsigned long long *missed, unsigned long long *overrun)
	__attribute__((unused));
static void cmp_ringtrace_stats(const char *dir, unsigned long long *hit,
				unsigned long long *missed, unsigned long long *overrun)
{
	char path[4200], line[512];
	unsigned long long v;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		cmp_die("%s: %s", path, strerror(errno));
	*hit = *missed = *overrun = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "stat hit %llu", &v) == 1)
			*hit = v;
		if (sscanf(line, "stat missed %llu", &v) == 1)
			*missed = v;
		if (sscanf(line, "stat overrun %llu", &v) == 1)
			*overrun = v;
	}
	fclose(f);
}

/* Nothing recorded and nothing lost: no tracer, or its tracepoint disabled. */
static inline void cmp_result_none(struct cmp_result *r)
{
	r->recorded = r->lost = 0;
	r->expected = 0;
}

/* The hooks of cmp_harness.h for a backend with nothing to do at that step. */
#define CMP_NO_INIT                                 \
	static int backend_init(struct cmp_opts *o) \
	{                                           \
		(void)o;                            \
		return 0;                           \
	}
#define CMP_NO_READY                                        \
	static void backend_ready(const struct cmp_opts *o) \
	{                                                   \
		(void)o;                                    \
	}

#endif /* CMP_H */
