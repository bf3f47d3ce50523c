/*
 * ringtrace-bench stall: what a writer pays, call by call, while its
 * recorder is stalled, against while it runs.
 *
 * THREADS writers call trace_bench_int() (the cheapest recorded event)
 * as fast as they can into an in-process session; each call is timed on
 * its own (the time-stamp counter read before and after it, on x86; the
 * monotonic clock elsewhere) and the calls of every writer together give
 * the nearest-rank p50, p99, p99.9 and maximum. Each window is a fresh
 * process (this program again): a session started, the writers warmed up
 * (CALLS/4 untimed calls each), CALLS timed calls each, the session stopped.
 * Per mode (discard, then overwrite) two windows, in turn:
 *
 *   running  the recorder thread does its work (discard: saves the pages
 *            to the trace directory, on tmpfs by default);
 *   stalled  the recorder thread is held for --stall-ms from its first
 *            act: RINGTRACE_FAULT=openat:4:stall=MS makes the session's
 *            fourth openat, the recorder's first file (its live
 *            metadata; the three before are the trace directory's, made
 *            by ringtrace_session_start), wait MS milliseconds, as a
 *            write to a stalled disk would. The writers start once the
 *            recorder thread is seen in that wait (/proc/self/task/T/syscall),
 *            and the window counts only if it is still there, and has
 *            written no page, when the writers are done.
 *
 * The stall needs a fault-injection build: a build folder of its own, as
 * Release, with -DRINGTRACE_FAULT_INJECTION=ON. Its event path is the
 * Release one: the injection wraps only ringtrace's allocation, file and
 * descriptor calls (src/base/fault_wrap.h), none of which a recorded
 * event makes (a reservation and a commit in the thread's page; a page
 * switch takes a page from the pool's lists). Stopping the recorder by
 * other means would stop the writers with it (SIGSTOP stops the whole
 * process; the recorder thread is the program's), and a debugger changes
 * what it measures. Both windows run in that build, so they differ only
 * in the stall.
 *
 * Output: one line per window (the four figures in ns, the calls timed,
 * the events lost of those the window wrote, its warm-up included), then
 * per mode the ratio stalled/running of each figure. On a counter that
 * steps by several ticks a read, the figures come in those steps.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ringtrace/ctf.h>
#include <ringtrace/session.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

struct stall_opts {
	unsigned threads;
	uint64_t calls;
	size_t bufsize, pagesize;
	unsigned stall_ms;
	const char *dir;
};

/* What a window measured (a child's one line on its stdout). */
struct stall_result {
	double p50, p99, p999, max; /* ns */
	uint64_t n, lost;
};

static inline uint64_t stall_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return bench_now_ns();
#endif
}

/* Nanoseconds per tick, measured against CLOCK_MONOTONIC over 50 ms. */
static double stall_ns_per_tick(void)
{
	uint64_t n0 = bench_now_ns(), t0 = stall_ticks();
	bench_sleep_us(50000);
	uint64_t n1 = bench_now_ns(), t1 = stall_ticks();
	return t1 > t0 ? (double)(n1 - n0) / (double)(t1 - t0) : 1.0;
}

struct stall_writer {
	pthread_t th;
	pthread_barrier_t *go;
	uint64_t calls;
	uint32_t *ticks; /* each timed call's duration, in ticks (saturated) */
};

static void *stall_write(void *arg)
{
	struct stall_writer *w = arg;
	for (uint64_t i = 0; i < w->calls / 4; i++)
		trace_bench_int((int)i);
	pthread_barrier_wait(w->go);
	for (uint64_t i = 0; i < w->calls; i++) {
		uint64_t t0 = stall_ticks();
		trace_bench_int((int)i);
		uint64_t d = stall_ticks() - t0;
		w->ticks[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
	}
	return NULL;
}

/* 1 if the session's recorder thread is in nanosleep (the injected
 * stall: it waits on a futex otherwise). */
static int stall_recorder_held(void)
{
	DIR *d = opendir("/proc/self/task");
	int held = 0;
	struct dirent *e;
	while (d && !held && (e = readdir(d)) != NULL) {
		char p[300], buf[64] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(p, "r");
		int rec = f && fgets(buf, sizeof(buf), f) && strcmp(buf, "ringtrace-rec\n") == 0;
		if (f)
			fclose(f);
		if (!rec)
			continue;
		snprintf(p, sizeof(p), "/proc/self/task/%s/syscall", e->d_name);
		f = fopen(p, "r");
		long nr = -1;
		if (f && fscanf(f, "%ld", &nr) == 1)
			held = nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return held;
}

static int stall_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The nearest-rank q-quantile of the sorted v[0..n). */
static uint32_t stall_rank(const uint32_t *v, uint64_t n, double q)
{
	uint64_t r = (uint64_t)((double)n * q + 0.999999);
	if (r < 1)
		r = 1;
	return v[(r > n ? n : r) - 1];
}

static int stall_rm(const char *p, const struct stat *s, int flag, struct FTW *f)
{
	(void)s;
	(void)flag;
	(void)f;
	return remove(p);
}

static int stall_start(const struct stall_opts *o, int overwrite, char *dir, size_t n)
{
	snprintf(dir, n, "%s-%d", o->dir, (int)getpid());
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.events = "bench_int";
	cfg.mode = overwrite ? RINGTRACE_RB_OVERWRITE : RINGTRACE_RB_DISCARD;
	cfg.pool_size = o->bufsize;
	cfg.page_size = o->pagesize;
	if (ringtrace_session_start(&cfg) < 0) {
		fprintf(stderr, "ringtrace-bench stall: %s\n", ringtrace_last_error());
		return -1;
	}
	return 0;
}

/* The writers' window, every call timed, into v (threads * calls). */
static int stall_window(const struct stall_opts *o, uint32_t *v)
{
	struct stall_writer w[64];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, o->threads);
	for (unsigned i = 0; i < o->threads; i++) {
		w[i] = (struct stall_writer){
			.go = &go, .calls = o->calls, .ticks = v + i * o->calls};
		if (pthread_create(&w[i].th, NULL, stall_write, &w[i]) != 0) {
			fprintf(stderr, "ringtrace-bench stall: cannot start a writer\n");
			return -1;
		}
	}
	for (unsigned i = 0; i < o->threads; i++)
		pthread_join(w[i].th, NULL);
	pthread_barrier_destroy(&go);
	return 0;
}

/* A child: one window (mode, stalled or not); its figures on stdout. */
static int stall_child(const struct stall_opts *o, int overwrite, int stalled)
{
	double npt = stall_ns_per_tick();
	uint64_t total = (uint64_t)o->threads * o->calls;
	uint32_t *v = malloc(total * sizeof(*v));
	char dir[4200];
	if (!v || stall_start(o, overwrite, dir, sizeof(dir)) < 0)
		return BENCH_EXIT_FAIL;
	for (int i = 0; stalled && !stall_recorder_held(); i++) {
		if (i == 10000) {
			fprintf(stderr, "ringtrace-bench stall: the recorder thread never stalled "
					"(RINGTRACE_FAULT not honoured?)\n");
			return BENCH_EXIT_FAIL;
		}
		bench_sleep_us(1000);
	}
	struct ringtrace_trace_stats s0, s1;
	ringtrace_session_stats(&s0);
	if (stall_window(o, v) < 0)
		return BENCH_EXIT_FAIL;
	ringtrace_session_stats(&s1);
	if (stalled && (!stall_recorder_held() || s1.pages != s0.pages)) {
		fprintf(stderr, "ringtrace-bench stall: the stall ended before the window did: "
				"give a longer --stall-ms or fewer --calls\n");
		return BENCH_EXIT_FAIL;
	}
	if (ringtrace_session_stop() < 0)
		fprintf(stderr, "ringtrace-bench stall: %s\n", ringtrace_last_error());
	nftw(dir, stall_rm, 16, FTW_DEPTH | FTW_PHYS);
	qsort(v, total, sizeof(*v), stall_cmp_u32);
	printf("%.2f %.2f %.2f %.2f %" PRIu64 " %" PRIu64 "\n", stall_rank(v, total, 0.5) * npt,
	       stall_rank(v, total, 0.99) * npt, stall_rank(v, total, 0.999) * npt,
	       v[total - 1] * npt, total, (s1.missed + s1.overrun) - (s0.missed + s0.overrun));
	free(v);
	return BENCH_EXIT_OK;
}

/* Run this program as a window's child and read its line (argv: the
 * verb's, options from argv[1]). */
static int stall_run_child(char **argv, int overwrite, int stalled, const struct stall_opts *o,
			   struct stall_result *r)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char spec[64];
		snprintf(spec, sizeof(spec), "openat:4:stall=%u", o->stall_ms);
		if (stalled)
			setenv("RINGTRACE_FAULT", spec, 1);
		else
			unsetenv("RINGTRACE_FAULT");
		setenv("RINGTRACE_ATTACH", "0", 1); /* (no listener thread beside the writers) */
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		char *args[32];
		int k = 0;
		args[k++] = "ringtrace-bench";
		args[k++] = "stall";
		args[k++] = overwrite ? "--child-overwrite" : "--child-discard";
		if (stalled)
			args[k++] = "--child-stalled";
		for (int i = 1; argv[i] && k < 30; i++)
			args[k++] = argv[i];
		args[k] = NULL;
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	int got = f && fscanf(f, "%lf %lf %lf %lf %" SCNu64 " %" SCNu64, &r->p50, &r->p99, &r->p999,
			      &r->max, &r->n, &r->lost) == 6;
	if (f)
		fclose(f);
	int st;
	waitpid(pid, &st, 0);
	return got && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void stall_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench stall [options]\n\n"
		"Per-call latency of writers at full rate (p50, p99, p99.9, max) with the\n"
		"recorder running and with it stalled, in discard and overwrite mode, and the\n"
		"ratio stalled/running. Needs a build with -DRINGTRACE_FAULT_INJECTION=ON.\n\n"
		"options:\n"
		"  --threads N       writer threads (default 2)\n"
		"  --calls N         timed calls per writer and window (default 1000000)\n"
		"  --buffer-size S   pool size (default 4m)\n"
		"  --page-size S     page size (default 64k)\n"
		"  --stall-ms MS     the recorder's stall (default 5000)\n"
		"  --dir DIR         trace directory prefix (default /dev/shm/ringtrace-bench-stall)\n"
		"  -h, --help        this help\n");
}

static int stall_parse(int argc, char **argv, struct stall_opts *o, int *child)
{
	static const struct option longopts[] = {
		{"threads", required_argument, NULL, 't'},
		{"calls", required_argument, NULL, 'n'},
		{"buffer-size", required_argument, NULL, 'b'},
		{"page-size", required_argument, NULL, 'p'},
		{"stall-ms", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'},
		{"child-discard", no_argument, NULL, 'D'},
		{"child-overwrite", no_argument, NULL, 'O'},
		{"child-stalled", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			stall_usage(stdout);
			return BENCH_EXIT_OK;
		case 't':
			if (bench_parse_uint(optarg, 1, 64, &o->threads))
				return bench_usage_error("stall", "--threads: '%s' (1-64)", optarg);
			break;
		case 'n':
			if (bench_parse_u64(optarg, 1000, 100000000, &o->calls))
				return bench_usage_error("stall", "--calls: '%s' (1000-1e8)",
							 optarg);
			break;
		case 'b':
			if (bench_parse_size(optarg, &o->bufsize))
				return bench_usage_error("stall", "--buffer-size: '%s'", optarg);
			break;
		case 'p':
			if (bench_parse_size(optarg, &o->pagesize))
				return bench_usage_error("stall", "--page-size: '%s'", optarg);
			break;
		case 's':
			if (bench_parse_uint(optarg, 100, 600000, &o->stall_ms))
				return bench_usage_error("stall", "--stall-ms: '%s' (100-600000)",
							 optarg);
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'D':
		case 'O':
			*child = (*child & 4) | (c == 'O' ? 2 : 1);
			break;
		case 'S':
			*child |= 4;
			break;
		default:
			return bench_getopt_error("stall", c, argv);
		}
	}
	if (optind < argc)
		return bench_usage_error("stall", "unexpected argument '%s'", argv[optind]);
	return -1;
}

static void stall_print(const char *mode, const char *what, const struct stall_result *r)
{
	printf("%-9s %-8s p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %10.1f ns  (%" PRIu64
	       " calls timed; of the %" PRIu64 " written, warm-up included, %" PRIu64 " lost)\n",
	       mode, what, r->p50, r->p99, r->p999, r->max, r->n, r->n / 4 * 5, r->lost);
}

int stall_bench_main(int argc, char **argv)
{
	struct stall_opts o = {2,         1000000, 4u << 20,
			       64u << 10, 5000,    "/dev/shm/ringtrace-bench-stall"};
	int child = 0;
	int rc = stall_parse(argc, argv, &o, &child);
	if (rc >= 0)
		return rc;
	if (child & 3)
		return stall_child(&o, (child & 3) == 2, (child & 4) != 0);
#ifndef RINGTRACE_FAULT_INJECTION
	fprintf(stderr,
		"ringtrace-bench stall: this build cannot stall its recorder: build it "
		"with -DRINGTRACE_FAULT_INJECTION=ON (a build folder of its own, Release)\n");
	return BENCH_EXIT_FAIL;
#endif
	printf("writers %u, %" PRIu64
	       " timed calls each a window, pool %zu, page %zu, stall %u ms\n",
	       o.threads, o.calls, o.bufsize, o.pagesize, o.stall_ms);
	for (int ow = 0; ow < 2; ow++) {
		const char *mode = ow ? "overwrite" : "discard";
		struct stall_result run, st;
		if (stall_run_child(argv, ow, 0, &o, &run) < 0 ||
		    stall_run_child(argv, ow, 1, &o, &st) < 0) {
			fprintf(stderr, "ringtrace-bench stall: a %s window failed\n", mode);
			return BENCH_EXIT_FAIL;
		}
		stall_print(mode, "running", &run);
		stall_print(mode, "stalled", &st);
		printf("%-9s ratio    p50 %8.2f  p99 %8.2f  p99.9 %8.2f  max %10.2f    (stalled/running)\n",
		       mode, st.p50 / run.p50, st.p99 / run.p99, st.p999 / run.p999,
		       st.max / run.max);
		fflush(stdout);
	}
	return BENCH_EXIT_OK;
}
