/*
 * ringtrace-bench start: what a session costs when it starts, and what the
 * first events after it cost against the steady state.
 *
 * Sessions start often (every `ringtrace record`, every snapshot cycle),
 * and a program traced in production must pay the steady-state cost from
 * its first event. Each run is a fresh process (a session, its pool and
 * the thread's first event are once-per-process costs), which:
 *
 *   1. moves itself to the second usable CPU, so that the session's
 *      recorder thread, created by ringtrace_session_start, runs there
 *      (as bench/compare starts its programs under taskset);
 *   2. times ringtrace_session_start (the pool made and populated, the
 *      clock calibrated, the recorder started, the metadata written);
 *   3. pins itself to the first CPU and times its first event, its second,
 *      then events [2, 100000), [100000, 1000000) and, after 2,000,000
 *      more untimed, a block of 1,000,000: the steady state;
 *   4. times ringtrace_session_stop.
 *
 * Every block is one loop timed with CLOCK_MONOTONIC around it, as the
 * micro benchmarks are. The parent prints the median of each figure over
 * the runs and the ratio of the first 100,000 events to the steady state.
 * The accounting (hit == events emitted, nothing missed in discard mode)
 * is read back from each run's trace metadata.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringtrace/session.h"

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

#define START_STEADY_SKIP 2000000ull
#define START_STEADY_N 1000000ull
#define START_TOTAL (1000000ull + START_STEADY_SKIP + START_STEADY_N)

/* One run's figures, sent from the child to the parent through a pipe. */
struct start_result {
	double start_us;   /* ringtrace_session_start */
	double first_us;   /* the thread's first event */
	double second_ns;  /* its second */
	double first100k;  /* ns an event, events [2, 100000) */
	double all100k;    /* ns an event, events [0, 100000): the first two included */
	double to1m;       /* ns an event, events [100000, 1000000) */
	double steady;     /* ns an event, the block after START_STEADY_SKIP more */
	double stop_ms;    /* ringtrace_session_stop */
	long first_faults; /* minor page faults taken by the first event */
	unsigned long long hit, missed;
	int ok;
};

static __attribute__((noinline)) void start_loop(uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		trace_bench_int((int)i);
		__asm__ __volatile__("" : : "r"(i));
	}
}

static long start_faults(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_minflt;
}

/* hit and missed from the trace's metadata (stat lines). */
static int start_stats(const char *dir, unsigned long long *hit, unsigned long long *missed)
{
	char path[4300], line[512];
	unsigned long long v;
	snprintf(path, sizeof(path), "%.4200s/metadata", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	*hit = *missed = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "stat hit %llu", &v) == 1)
			*hit = v;
		if (sscanf(line, "stat missed %llu", &v) == 1)
			*missed = v;
	}
	fclose(f);
	return 0;
}

static void start_child(const char *dir, int overwrite, size_t pool, const int *cpus, int ncpus,
			int fd)
{
	struct start_result r;
	memset(&r, 0, sizeof(r));
	/* The recorder thread inherits this mask: the other CPU. */
	bench_pin_self(ncpus > 1 ? cpus[1] : cpus[0]);
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "bench_int";
	cfg.mode = overwrite ? RINGTRACE_RB_OVERWRITE : RINGTRACE_RB_DISCARD;
	cfg.pool_size = pool;
	uint64_t t0 = bench_now_ns();
	if (ringtrace_session_start(&cfg) < 0) {
		fprintf(stderr, "ringtrace-bench start: ringtrace_session_start: %s\n",
			ringtrace_last_error());
		_exit(1);
	}
	uint64_t t1 = bench_now_ns();
	bench_pin_self(cpus[0]);
	long f0 = start_faults();
	uint64_t a = bench_now_ns();
	start_loop(0, 1);
	uint64_t b = bench_now_ns();
	long f1 = start_faults();
	start_loop(1, 1);
	uint64_t c = bench_now_ns();
	start_loop(2, 100000 - 2);
	uint64_t d = bench_now_ns();
	start_loop(100000, 900000);
	uint64_t e = bench_now_ns();
	start_loop(1000000, START_STEADY_SKIP);
	uint64_t g = bench_now_ns();
	start_loop(1000000 + START_STEADY_SKIP, START_STEADY_N);
	uint64_t h = bench_now_ns();
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "ringtrace-bench start: ringtrace_session_stop: %s\n",
			ringtrace_last_error());
		_exit(1);
	}
	uint64_t t2 = bench_now_ns();
	r.start_us = (double)(t1 - t0) / 1e3;
	r.first_us = (double)(b - a) / 1e3;
	r.second_ns = (double)(c - b);
	r.first100k = (double)(d - c) / (100000 - 2);
	r.all100k = (double)(d - a) / 100000;
	r.to1m = (double)(e - d) / 900000;
	r.steady = (double)(h - g) / START_STEADY_N;
	r.stop_ms = (double)(t2 - h) / 1e6;
	r.first_faults = f1 - f0;
	r.ok = start_stats(dir, &r.hit, &r.missed) == 0;
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	_exit(0);
}

static void start_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench start [options]\n\n"
		"A session's start and its first events against the steady state: each run\n"
		"a fresh process that starts a session (its recorder on the second CPU),\n"
		"times its first event, events [2, 100000) and [100000, 1000000), then,\n"
		"after 2,000,000 untimed, 1,000,000 more (the steady state), and stops.\n\n"
		"  --runs N       processes (default 7); medians are printed\n"
		"  --mode M       discard (default) or overwrite\n"
		"  --buffer SIZE  pool size (default 128m: discard keeps every event)\n"
		"  --dir DIR      where the traces go (default /dev/shm/ringtrace-bench-start)\n");
}

int start_bench_main(int argc, char **argv)
{
	unsigned runs = 7;
	int overwrite = 0;
	size_t pool = 128u << 20;
	const char *dir = "/dev/shm/ringtrace-bench-start";
	static const struct option opts[] = {
		{"runs", required_argument, NULL, 'r'},   {"mode", required_argument, NULL, 'm'},
		{"buffer", required_argument, NULL, 'b'}, {"dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (bench_parse_uint(optarg, 1, 1000, &runs) < 0)
				return bench_usage_error("start", "--runs '%s': 1 to 1000", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "overwrite"))
				overwrite = 1;
			else if (strcmp(optarg, "discard"))
				return bench_usage_error(
					"start", "--mode '%s': discard or overwrite", optarg);
			break;
		case 'b':
			if (bench_parse_size(optarg, &pool) < 0)
				return bench_usage_error("start", "--buffer '%s': a size", optarg);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'h':
			start_usage(stdout);
			return BENCH_EXIT_OK;
		default:
			return bench_getopt_error("start", c, argv);
		}
	}
	int cpus[2];
	int ncpus = bench_usable_cpus(cpus, 2);
	if (ncpus < 1) {
		fprintf(stderr, "ringtrace-bench start: no usable CPU\n");
		return BENCH_EXIT_FAIL;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "ringtrace-bench start: %s: %s\n", dir, strerror(errno));
		return BENCH_EXIT_FAIL;
	}
	double v[8][1000];
	int fail = 0;
	printf("runs: %u, mode: %s, pool: %zu bytes, measured CPU %d, recorder on CPU %d\n", runs,
	       overwrite ? "overwrite" : "discard", pool, cpus[0], ncpus > 1 ? cpus[1] : cpus[0]);
	printf("run  start_us  first_us faults second_ns  first100k  100k-1M  steady  stop_ms\n");
	for (unsigned k = 0; k < runs; k++) {
		char sub[4200];
		snprintf(sub, sizeof(sub), "%.4000s/run-%u", dir, k);
		char cmd[4400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sub);
		if (system(cmd) != 0)
			return BENCH_EXIT_FAIL;
		int p[2];
		if (pipe(p) < 0)
			return BENCH_EXIT_FAIL;
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return BENCH_EXIT_FAIL;
		if (pid == 0) {
			close(p[0]);
			start_child(sub, overwrite, pool, cpus, ncpus, p[1]);
		}
		close(p[1]);
		struct start_result r;
		ssize_t n = read(p[0], &r, sizeof(r));
		close(p[0]);
		int st = 0;
		waitpid(pid, &st, 0);
		if (n != (ssize_t)sizeof(r) || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "ringtrace-bench start: run %u failed\n", k);
			return BENCH_EXIT_FAIL;
		}
		/* Discard mode with a pool that holds the run: every event kept. */
		int acc = r.ok && r.hit == START_TOTAL && (overwrite || r.missed == 0);
		if (!acc)
			fail = 1;
		printf("%3u %9.0f %9.1f %6ld %9.0f %10.2f %8.2f %7.2f %8.1f  hit=%llu missed=%llu%s\n",
		       k, r.start_us, r.first_us, r.first_faults, r.second_ns, r.first100k, r.to1m,
		       r.steady, r.stop_ms, r.hit, r.missed, acc ? "" : " ACCOUNTING WRONG");
		v[0][k] = r.start_us;
		v[1][k] = r.first_us;
		v[2][k] = r.second_ns;
		v[3][k] = r.first100k;
		v[4][k] = r.to1m;
		v[5][k] = r.steady;
		v[6][k] = r.stop_ms;
		v[7][k] = r.all100k;
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sub);
		if (system(cmd) != 0)
			return BENCH_EXIT_FAIL;
	}
	double m[8];
	for (int i = 0; i < 8; i++)
		m[i] = bench_median(v[i], runs);
	printf("session start: %.0f us (median)\n", m[0]);
	printf("first event: %.1f us\n", m[1]);
	printf("second event: %.0f ns\n", m[2]);
	printf("events 0-100,000 (the first included): %.2f ns an event\n", m[7]);
	printf("events 2-100,000: %.2f ns an event\n", m[3]);
	printf("events 100,000-1,000,000: %.2f ns an event\n", m[4]);
	printf("steady state (after 3,000,000): %.2f ns an event\n", m[5]);
	printf("session stop: %.1f ms\n", m[6]);
	printf("ratio first 100k / steady: %.3f (without the first two events: %.3f)\n",
	       m[7] / m[5], m[3] / m[5]);
	printf("ratio 100k-1M / steady: %.3f\n", m[4] / m[5]);
	printf("accounting: %s\n", fail ? "WRONG" : "ok");
	return fail ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
}
