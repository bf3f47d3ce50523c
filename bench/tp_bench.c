/*
 * bench/tp_bench.c - `ringtrace-bench tp`: the tracepoint microbenchmark.
 *
 * What it reproduces
 * ------------------
 * The Linux Kernel Markers microbenchmark (Mathieu Desnoyers,
 * 2007): time a tight loop of N iterations with nothing in it, then with a
 * disabled marker, then with the marker enabled into an empty probe, then
 * with its data recorded, and report the cost per iteration. Here the
 * marker is a ringtrace tracepoint, trace_bench_int(i) (bench_events.h),
 * and the loops are timed with clock_gettime(CLOCK_MONOTONIC) on a thread
 * pinned to one CPU (user space cannot disable interrupts).
 *
 * Lines (ns per iteration, 2 decimals):
 *   empty loop                 the loop alone
 *   disabled tracepoint        the loop with trace_bench_int(i), the event
 *                              disabled, MINUS the empty loop
 *   enabled, empty probe       event enabled only by a registered probe
 *                              that does nothing (no recording)
 *   enabled, recorded          event recorded into the events buffer
 *                              (ringtrace_events_set_buffer), no probe
 *   binary printf (3 ints)     ringtrace_printf("a=%d b=%d c=%d", ...)
 *                              enabled and recorded
 *   snprintf (3 ints)          snprintf of the same format into a local
 *                              buffer: formatting at record time, for
 *                              contrast (the markers microbenchmark's "format string
 *                              processing")
 *   cheapest event             the floor of rb: rdtsc + 16-byte store +
 *                              release store (bench_common.c)
 * then "recorded / cheapest" and "binary printf / recorded".
 * Every line but "disabled tracepoint" is the whole loop per iteration,
 * loop overhead included, as "cheapest event" is.
 * Targets (docs/benchmarks.md): disabled <= 0.35 ns, recorded <= 1.2 x
 * cheapest, binary printf <= 2 x recorded.
 *
 * Method
 * ------
 * Every loop has the same shape and the same barrier per iteration
 * (TP_KEEP: an empty asm that makes the counter opaque, so no loop can be
 * removed, vectorized or strength-reduced, the empty one included). The
 * three tracepoint lines run the very same machine code (loop_tp); only
 * the event's state differs. By default each loop is first run with a
 * growing count until it takes >= 20 ms (this is also its warm-up), then
 * measured with N chosen for ~0.3 s; --iterations N fixes N (after a
 * warm-up of min(N, 100000)).
 *
 * The events buffer is in overwrite mode (it never fills, nothing reads
 * it) with a small pool, 256 KiB by default: like the cheapest event's
 * 64 KiB buffer it stays in the cache, so the comparison is of the
 * recording path, not of memory bandwidth (--pool-size to change it).
 * Check: each recorded loop must have committed every event it offered
 * (stats.hit grows by the iterations, stats.missed does not grow), else
 * a WARNING and exit 1.
 *
 * --runs R repeats the whole block R times (each after "run: i/R") and
 * ends with the median of each line ("median <line>: ...").
 *
 * --memcpy runs instead the cache-pressure cases of tp_pressure.c: the
 * disabled tracepoint in loops of 4 KiB memcpy (in cache, sweeping 8 MiB,
 * and with its state line flushed), each against the same loop without
 * it, alternated until 0.1 ns can be told apart (--max-seconds per case).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringtrace/event.h"
#include "ringtrace/ring.h"

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"
#include "tp_pressure.h"

#define TP_TARGET_NS 300000000ull   /* per measured loop, auto mode */
#define TP_CALIB_MIN_NS 20000000ull /* calibration: run until this long */
#define TP_WARMUP_MAX 100000ull     /* warm-up iterations with --iterations */
#define TP_MAX_ITERATIONS (1ull << 40)
#define TP_MAX_RUNS 1000u
#define TP_DEFAULT_POOL (256u << 10)

/* The counter is opaque to the compiler after this: the loop stays a loop. */
#define TP_KEEP(i) __asm__ __volatile__("" : "+r"(i))

struct tp_opts {
	uint64_t iterations; /* 0: auto */
	unsigned runs;
	int cpu; /* -1: first usable CPU */
	size_t pool_size;
	int memcpy_cases;   /* --memcpy */
	double max_seconds; /* per memcpy case */
};

enum {
	L_EMPTY,
	L_DISABLED,
	L_PROBE,
	L_RECORDED,
	L_PRINTF,
	L_SNPRINTF,
	L_CHEAPEST,
	L_REC_RATIO,
	L_PF_RATIO,
	L_COUNT
};

static const struct {
	const char *key;
	const char *unit;
} tp_lines[L_COUNT] = {
	[L_EMPTY] = {"empty loop", " ns"},
	[L_DISABLED] = {"disabled tracepoint", " ns"},
	[L_PROBE] = {"enabled, empty probe", " ns"},
	[L_RECORDED] = {"enabled, recorded", " ns"},
	[L_PRINTF] = {"binary printf (3 ints)", " ns"},
	[L_SNPRINTF] = {"snprintf (3 ints)", " ns"},
	[L_CHEAPEST] = {"cheapest event", " ns"},
	[L_REC_RATIO] = {"recorded / cheapest", ""},
	[L_PF_RATIO] = {"binary printf / recorded", ""},
};

/* ---- the loops ------------------------------------------------------------ */

typedef void (*loop_fn)(uint64_t n);

static __attribute__((noinline)) void loop_empty(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		TP_KEEP(i);
}

/* disabled, empty probe and recorded: the same code, the event's state differs */
static __attribute__((noinline)) void loop_tp(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_int((int)i);
		TP_KEEP(i);
	}
}

static __attribute__((noinline)) void loop_printf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		ringtrace_printf("a=%d b=%d c=%d", (int)i, (int)(i + 1), (int)(i + 2));
		TP_KEEP(i);
	}
}

static __attribute__((noinline)) void loop_snprintf(uint64_t n)
{
	char buf[64];
	for (uint64_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "a=%d b=%d c=%d", (int)i, (int)(i + 1), (int)(i + 2));
		__asm__ __volatile__("" ::"r"(buf) : "memory");
		TP_KEEP(i);
	}
}

static void empty_probe(void *data, int v)
{
	(void)data;
	(void)v;
}

/* ns per iteration of fn over n iterations. */
static double time_loop(loop_fn fn, uint64_t n)
{
	uint64_t t0 = bench_now_ns();
	fn(n);
	uint64_t t1 = bench_now_ns();
	return (double)(t1 - t0) / (double)n;
}

/*
 * Warm fn up and choose its iteration count: the given one, or (auto) one
 * for ~TP_TARGET_NS from a run of at least TP_CALIB_MIN_NS. *offered gets
 * the iterations run here (for the recording check).
 */
static uint64_t prepare_loop(const struct tp_opts *o, loop_fn fn, uint64_t *offered)
{
	if (o->iterations) {
		uint64_t w = o->iterations < TP_WARMUP_MAX ? o->iterations : TP_WARMUP_MAX;
		fn(w);
		*offered = w;
		return o->iterations;
	}
	uint64_t n = 1u << 12, total = 0;
	for (;;) {
		uint64_t t0 = bench_now_ns();
		fn(n);
		uint64_t dt = bench_now_ns() - t0;
		total += n;
		if (dt >= TP_CALIB_MIN_NS || n >= TP_MAX_ITERATIONS / 4) {
			*offered = total;
			double want = (double)TP_TARGET_NS * (double)n / (double)(dt ? dt : 1);
			if (want < 1000.0)
				return 1000;
			if (want > (double)TP_MAX_ITERATIONS)
				return TP_MAX_ITERATIONS;
			return (uint64_t)want;
		}
		n *= 4;
	}
}

/* ---- one run -------------------------------------------------------------- */

struct tp_ctx {
	const struct tp_opts *o;
	ringtrace_rb *rb;
	int failed;
};

static double measure(struct tp_ctx *c, loop_fn fn)
{
	uint64_t offered;
	uint64_t n = prepare_loop(c->o, fn, &offered);
	return time_loop(fn, n);
}

/*
 * A measurement whose events must all be recorded: checks that stats.hit
 * grew by exactly the iterations run and that nothing was missed.
 */
static double measure_recorded(struct tp_ctx *c, loop_fn fn, const char *what)
{
	struct ringtrace_rb_stats a, b;
	uint64_t offered;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ringtrace_rb_get_stats(c->rb, &a);
	uint64_t n = prepare_loop(c->o, fn, &offered);
	double ns = time_loop(fn, n);
	ringtrace_rb_get_stats(c->rb, &b);
	if (b.hit - a.hit != offered + n || b.missed != a.missed) {
		printf("WARNING: %s: %" PRIu64 " events offered, %" PRIu64 " recorded, %" PRIu64
		       " missed\n",
		       what, offered + n, b.hit - a.hit, b.missed - a.missed);
		c->failed = 1;
	}
	return ns;
}

static int set_event(const char *name, int on)
{
	int rc = on ? ringtrace_event_enable(name) : ringtrace_event_disable(name);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench tp: cannot %s %s: %s: %s\n",
			on ? "enable" : "disable", name, ringtrace_strerror(rc),
			ringtrace_last_error());
		return -1;
	}
	return 0;
}

/* Fills v[L_COUNT]; returns 0 or BENCH_EXIT_FAIL (setup failed). */
static int run_once(struct tp_ctx *c, double *v)
{
	int rc;

	v[L_EMPTY] = measure(c, loop_empty);

	/* disabled: not recorded, no probe */
	v[L_DISABLED] = measure(c, loop_tp) - v[L_EMPTY];

	/* enabled only by a probe that does nothing */
	rc = ringtrace_probe_register_bench_int(empty_probe, NULL);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench tp: ringtrace_probe_register: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		return BENCH_EXIT_FAIL;
	}
	v[L_PROBE] = measure(c, loop_tp);
	rc = ringtrace_probe_unregister_bench_int(empty_probe, NULL);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench tp: ringtrace_probe_unregister: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		return BENCH_EXIT_FAIL;
	}

	/* recorded into the events buffer */
	if (set_event("bench_int", 1))
		return BENCH_EXIT_FAIL;
	v[L_RECORDED] = measure_recorded(c, loop_tp, "enabled, recorded");
	if (set_event("bench_int", 0))
		return BENCH_EXIT_FAIL;

	if (set_event("ringtrace_printf", 1))
		return BENCH_EXIT_FAIL;
	v[L_PRINTF] = measure_recorded(c, loop_printf, "binary printf");
	if (set_event("ringtrace_printf", 0))
		return BENCH_EXIT_FAIL;

	v[L_SNPRINTF] = measure(c, loop_snprintf);
	v[L_CHEAPEST] = bench_cheapest_here();
	v[L_REC_RATIO] = v[L_RECORDED] / v[L_CHEAPEST];
	v[L_PF_RATIO] = v[L_PRINTF] / v[L_RECORDED];
	return 0;
}

static void print_lines(const char *prefix, const double *v)
{
	for (int i = 0; i < L_COUNT; i++) {
		double x = fabs(v[i]) < 0.005 ? 0.0 : v[i]; /* no "-0.00" */
		printf("%s%s: %.2f%s\n", prefix, tp_lines[i].key, x, tp_lines[i].unit);
	}
}

/* ---- options --------------------------------------------------------------- */

static void tp_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench tp [options]\n"
		"\n"
		"The tracepoint microbenchmark (in the shape of the Linux Kernel Markers one): ns per\n"
		"iteration of a tight loop, empty, with a disabled tracepoint, with the\n"
		"tracepoint enabled into an empty probe, recorded, with ringtrace_printf and\n"
		"with snprintf; and the cheapest possible event, for comparison. Pinned to\n"
		"one CPU.\n"
		"\n"
		"options:\n"
		"  --iterations N       iterations per loop (default: chosen per loop for ~0.3 s)\n"
		"  --runs R             repeat R times and print the median of each line (default 1)\n"
		"  --cpu C              the CPU to pin to (default: the first usable one)\n"
		"  --pool-size BYTES    events buffer pool (default 256k; overwrite mode)\n"
		"  --memcpy             instead: the disabled tracepoint in loops of 4 KiB memcpy\n"
		"                       (in cache, sweeping 8 MiB, its state line flushed), each\n"
		"                       against the loop without it, until 0.1 ns is resolved\n"
		"  --max-seconds S      --memcpy: the most time per case (default 20)\n"
		"  -h, --help           this help\n"
		"\n"
		"exit status: 0 ok, 1 a recorded loop lost events or setup failed, 2 usage error\n");
}

#define usage_error(fmt, arg) bench_usage_error("tp", fmt, arg)

enum { OPT_ITERATIONS = 256, OPT_RUNS, OPT_CPU, OPT_POOL_SIZE, OPT_MEMCPY, OPT_MAX_SECONDS };

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int tp_parse_args(int argc, char **argv, struct tp_opts *o)
{
	static const struct option longopts[] = {
		{"iterations", required_argument, NULL, OPT_ITERATIONS},
		{"runs", required_argument, NULL, OPT_RUNS},
		{"cpu", required_argument, NULL, OPT_CPU},
		{"pool-size", required_argument, NULL, OPT_POOL_SIZE},
		{"memcpy", no_argument, NULL, OPT_MEMCPY},
		{"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *arg = optarg;
		switch (c) {
		case 'h':
			tp_usage(stdout);
			return BENCH_EXIT_OK;
		case OPT_ITERATIONS:
			if (bench_parse_u64(arg, 1, TP_MAX_ITERATIONS, &o->iterations))
				return usage_error(
					"--iterations: '%s' is not a count from 1 to 2^40", arg);
			break;
		case OPT_RUNS:
			if (bench_parse_uint(arg, 1, TP_MAX_RUNS, &o->runs))
				return usage_error("--runs: '%s' is not a count from 1 to 1000",
						   arg);
			break;
		case OPT_CPU: {
			unsigned cpu;
			if (bench_parse_uint(arg, 0, CPU_SETSIZE - 1, &cpu))
				return usage_error("--cpu: '%s' is not a CPU number", arg);
			o->cpu = (int)cpu;
			break;
		}
		case OPT_POOL_SIZE:
			if (bench_parse_size(arg, &o->pool_size))
				return usage_error("--pool-size: '%s' is not a size in bytes", arg);
			break;
		case OPT_MEMCPY:
			o->memcpy_cases = 1;
			break;
		case OPT_MAX_SECONDS:
			if (bench_parse_seconds(arg, 3600, &o->max_seconds))
				return usage_error(
					"--max-seconds: '%s' is not a time from 0 to 3600 s", arg);
			break;
		default: /* ':' missing value, '?' unknown option */
			return bench_getopt_error("tp", c, argv);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return -1;
}

/* An overwriting buffer of pool_size; small pools get smaller pages, at least 4. */
static void tp_config(struct ringtrace_rb_config *cfgp, size_t pool_size)
{
	ringtrace_rb_config_init(cfgp);
	cfgp->mode = RINGTRACE_RB_OVERWRITE;
	cfgp->pool_size = pool_size;
	if (cfgp->pool_size % cfgp->page_size ||
	    cfgp->pool_size / cfgp->page_size < RINGTRACE_RB_MIN_PAGES) {
		/* small pools: smaller pages, at least 4 of them */
		while (cfgp->page_size > RINGTRACE_RB_MIN_PAGE_SIZE &&
		       cfgp->pool_size / cfgp->page_size < 4)
			cfgp->page_size /= 2;
		cfgp->pool_size = (cfgp->pool_size + cfgp->page_size - 1) / cfgp->page_size *
				  cfgp->page_size;
		if (cfgp->pool_size / cfgp->page_size < RINGTRACE_RB_MIN_PAGES)
			cfgp->pool_size = (size_t)RINGTRACE_RB_MIN_PAGES * cfgp->page_size;
	}
}

/* The runs, each printed, then the medians; returns the exit status. */
static int tp_runs(struct tp_ctx *ctx)
{
	double *all = calloc((size_t)ctx->o->runs * L_COUNT, sizeof(double));
	double *col = calloc(ctx->o->runs, sizeof(double));
	int rc, status = BENCH_EXIT_OK;
	if (!all || !col) {
		fprintf(stderr, "ringtrace-bench tp: out of memory\n");
		status = BENCH_EXIT_FAIL;
	}
	unsigned done = 0;
	for (unsigned r = 0; status == BENCH_EXIT_OK && r < ctx->o->runs; r++) {
		double *v = all + (size_t)r * L_COUNT;
		rc = run_once(ctx, v);
		if (rc) {
			status = rc;
			break;
		}
		if (ctx->o->runs > 1)
			printf("\nrun: %u/%u\n", r + 1, ctx->o->runs);
		print_lines("", v);
		fflush(stdout);
		done++;
	}
	if (status == BENCH_EXIT_OK && ctx->o->runs > 1) {
		double med[L_COUNT];
		for (int i = 0; i < L_COUNT; i++) {
			for (unsigned r = 0; r < done; r++)
				col[r] = all[(size_t)r * L_COUNT + i];
			med[i] = bench_median(col, done);
		}
		printf("\n");
		print_lines("median ", med);
	}
	free(all);
	free(col);
	return status;
}

int tp_bench_main(int argc, char **argv)
{
	struct tp_opts o = {.iterations = 0,
			    .runs = 1,
			    .cpu = -1,
			    .pool_size = TP_DEFAULT_POOL,
			    .memcpy_cases = 0,
			    .max_seconds = 20};
	int status = tp_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;

	if (o.cpu < 0) {
		int cpus[1];
		o.cpu = bench_usable_cpus(cpus, 1) == 1 ? cpus[0] : -1;
	}
	int perr = bench_pin_self(o.cpu);
	if (perr) {
		fprintf(stderr, "ringtrace-bench tp: cannot pin to CPU %d: %s\n", o.cpu,
			strerror(perr));
		return BENCH_EXIT_USAGE;
	}

	struct ringtrace_rb_config cfg;
	tp_config(&cfg, o.pool_size);
	struct tp_ctx ctx = {.o = &o, .rb = NULL, .failed = 0};
	int rc = ringtrace_rb_create(&cfg, &ctx.rb);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench tp: cannot create the ring buffer: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		return rc == -RINGTRACE_EINVAL ? BENCH_EXIT_USAGE : BENCH_EXIT_FAIL;
	}
	/* Start from a known state whatever RINGTRACE_EVENTS said. */
	if (set_event("bench_int", 0) || set_event("ringtrace_printf", 0)) {
		ringtrace_rb_destroy(ctx.rb);
		return BENCH_EXIT_FAIL;
	}
	rc = ringtrace_events_set_buffer(ctx.rb);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench tp: ringtrace_events_set_buffer: %s: %s\n",
			ringtrace_strerror(rc), ringtrace_last_error());
		ringtrace_rb_destroy(ctx.rb);
		return BENCH_EXIT_FAIL;
	}

	printf("cpu: %d\n", o.cpu);
	if (o.memcpy_cases) {
		status = tp_pressure_run(o.max_seconds, 0.1);
		ringtrace_events_set_buffer(NULL);
		ringtrace_rb_destroy(ctx.rb);
		return status ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
	}
	if (o.iterations)
		printf("iterations: %" PRIu64 "\n", o.iterations);
	else
		printf("iterations: auto (~%.1f s per loop)\n", (double)TP_TARGET_NS / 1e9);
	printf("buffer: %zu KiB pool, %zu KiB pages, overwrite\n", cfg.pool_size >> 10,
	       cfg.page_size >> 10);

	status = tp_runs(&ctx);
	if (status == BENCH_EXIT_OK && ctx.failed)
		status = BENCH_EXIT_FAIL;

	ringtrace_events_set_buffer(NULL);
	ringtrace_rb_writer_release(ctx.rb);
	ringtrace_rb_destroy(ctx.rb);
	return status;
}
