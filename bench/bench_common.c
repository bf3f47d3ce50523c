/*
 * bench/bench_common.c - helpers shared by the ringtrace-bench subcommands
 * (see bench_common.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "ringtrace/static/cpu.h"

/* cheapest event: 64 KiB buffer, 16-byte records */
#define CHEAP_BUF_SIZE (64u << 10)
#define CHEAP_ITERS 2000000ull /* per sample */
#define CHEAP_SAMPLES 5        /* per measurement: median of these */

void bench_sleep_us(unsigned us)
{
	struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000l};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

int bench_pin_self(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int bench_usable_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	if (m == 0)
		return NAN;
	qsort(v, m, sizeof(*v), cmp_double);
	return (m & 1) ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2.0;
}

int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

int bench_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	uint64_t v;
	if (bench_parse_u64(s, min, max, &v))
		return -1;
	*out = (unsigned)v;
	return 0;
}

int bench_parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	if (*s == '-' || *s == '\0')
		return -1;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && shift) /* KiB, MiB */
		end++;
	if ((*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0' || v == 0)
		return -1;
	if (shift && v > (SIZE_MAX >> shift))
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

int bench_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* ---- cheapest event ------------------------------------------------------ */

static uint64_t cheap_buf[CHEAP_BUF_SIZE / sizeof(uint64_t)] __attribute__((aligned(64)));
static uint64_t cheap_commit __attribute__((aligned(64)));

static inline uint64_t cheap_timestamp(void)
{
	/* the cycle counter as ringtrace reads it (one instruction), else the clock */
	uint64_t t;
	if (ringtrace_hw_ticks_(&t))
		return t;
	return bench_now_ns();
}

/* ns per iteration of: timestamp + 16-byte store + release store of the position. */
static __attribute__((noinline)) double cheapest_sample(uint64_t iters)
{
	uint64_t pos = __atomic_load_n(&cheap_commit, __ATOMIC_RELAXED);
	uint64_t t0 = bench_now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t ts = cheap_timestamp();
		uint64_t *slot = &cheap_buf[pos / sizeof(uint64_t)];
		slot[0] = ts;
		slot[1] = i;
		pos = (pos + 16) & (CHEAP_BUF_SIZE - 1);
		__atomic_store_n(&cheap_commit, pos, __ATOMIC_RELEASE);
	}
	uint64_t t1 = bench_now_ns();
	__asm__ __volatile__("" ::"r"(cheap_buf) : "memory");
	return (double)(t1 - t0) / (double)iters;
}

double bench_cheapest_here(void)
{
	double s[CHEAP_SAMPLES];
	cheapest_sample(CHEAP_ITERS / 4); /* warm up: fault in the buffer, wake the core */
	for (int i = 0; i < CHEAP_SAMPLES; i++)
		s[i] = cheapest_sample(CHEAP_ITERS);
	return bench_median(s, CHEAP_SAMPLES);
}

struct cheap_arg {
	int cpu;
	double ns;
};

static void *cheapest_thread(void *p)
{
	struct cheap_arg *a = p;
	bench_pin_self(a->cpu);
	a->ns = bench_cheapest_here();
	return NULL;
}

double bench_measure_cheapest(int cpu)
{
	struct cheap_arg a = {.cpu = cpu, .ns = NAN};
	pthread_t t;
	if (pthread_create(&t, NULL, cheapest_thread, &a) != 0) {
		cheapest_thread(&a);
		return a.ns;
	}
	pthread_join(t, NULL);
	return a.ns;
}

int bench_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "ringtrace-bench %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ringtrace-bench %s --help'.\n", cmd);
	return BENCH_EXIT_USAGE;
}

int bench_getopt_error(const char *cmd, int c, char **argv)
{
	if (c == ':')
		return bench_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	if (optopt && optopt < 256) {
		char s[3] = {'-', (char)optopt, 0};
		return bench_usage_error(cmd, "unknown option '%s'", s);
	}
	return bench_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}
