/*
 * bench/filter_bench.c - `ringtrace-bench filter`: what a filter costs.
 *
 * What it reproduces
 * ------------------
 * The kernel's ring_buffer_benchmark and trace event benchmark filter
 * kernel events (`mydata == 10`, `delta & 1`)
 * and ask what an event the filter discards costs (40-50 ns there, the
 * record being built in the ring buffer and then discarded). Here the
 * event is trace_bench_value(int value) (bench_events.h) with the filter
 * `value & 1`, in the same pinned loop as `ringtrace-bench tp`:
 *
 *   recorded          no filter: every call recorded (the baseline)
 *   filter passed     filter set, every value odd: every call recorded
 *   filter rejected   filter set, every value even: nothing recorded
 *   filter mixed      filter set, values alternate (half pass): for
 *                     the branch predictor's sake, informational
 *   complex rejected  `value & 1 && value > 0 || value == -7`: a filter
 *                     the tracepoint cannot evaluate inline (the
 *                     interpreter), every value even: rejected
 *   compare rejected  `value > 2000000000`: one comparison, inline
 *   string recorded   bench_named(int value, const char *name), no
 *                     filter: the baseline of the next case
 *   glob rejected     `value & 1 || value > 2000000000 || name ~ "eth*"
 *                     && value != 3` on bench_named: ||, && and a string
 *                     glob (the interpreter), every call rejected
 *   range rejected    `value >= -2000 && value <= -1000` (two tests)
 *   string == rejected, prefix rejected, glob general rejected:
 *                     `name == "eth0"`, `name ~ "eth*"`, `name ~ "*eth?"`
 *                     on bench_named (name "lo0")
 *   real recorded     bench_real(double x), no filter: the baseline of
 *   float rejected    `x > 1e18` on bench_real
 * then "filter rejected / recorded", "filter passed / recorded" and
 * every other rejection over the recording of its own event. Targets
 * (docs/benchmarks.md): a simple comparison's rejection <= 1/4 of a
 * recorded call, any filter's below it; passed <= 1.2 x recorded.
 *
 * Method: the loops of tp (an opaque counter per iteration, warm-up and
 * calibration to ~0.3 s each), the events buffer in overwrite mode with a
 * 256 KiB pool (it stays in the cache; nothing reads it). The cases run
 * interleaved, --runs times (default 5), and each line is the median.
 * Every loop is checked: recorded/passed ones must add exactly their
 * calls to the buffer's `hit` count, rejected ones must add nothing there
 * and exactly their calls to the event's `rejected` counter; otherwise a
 * WARNING and exit status 1.
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
#include "ringtrace/filter.h"
#include "ringtrace/ring.h"

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

#define FB_TARGET_NS 300000000ull
#define FB_CALIB_MIN_NS 20000000ull
#define FB_MAX_RUNS 1000u
#define FB_POOL (256u << 10)
#define FB_KEEP(i) __asm__ __volatile__("" : "+r"(i))

typedef void (*loop_fn)(uint64_t n);

/* odd values: pass `value & 1` */
static __attribute__((noinline)) void loop_odd(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_value((int)(2 * i + 1));
		FB_KEEP(i);
	}
}

/* even values: rejected */
static __attribute__((noinline)) void loop_even(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_value((int)(2 * i));
		FB_KEEP(i);
	}
}

static __attribute__((noinline)) void loop_mixed(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_value((int)i);
		FB_KEEP(i);
	}
}

/* even values and a name no glob below matches: rejected */
static __attribute__((noinline)) void loop_named(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_named((int)(2 * i), "lo0");
		FB_KEEP(i);
	}
}

/* doubles below 1e18: rejected by `x > 1e18` */
static __attribute__((noinline)) void loop_real(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		trace_bench_real((double)i * 0.5);
		FB_KEEP(i);
	}
}

/*
 * The cases, run in this order each round. `want`: recorded calls per 2
 * calls (2 all, 1 half, 0 none). The last two are the string event's
 * baseline and a filter with a string glob, which the interpreter runs.
 */
struct fb_case {
	const char *name, *event, *filter;
	loop_fn loop;
	uint64_t want;
};

enum {
	C_RECORDED,
	C_PASSED,
	C_REJECTED,
	C_MIXED,
	C_GT,
	C_COMPLEX,
	C_NRECORDED,
	C_GLOB,
	C_RANGE,
	C_STREQ,
	C_PREFIX,
	C_GLOBQ,
	C_RRECORDED,
	C_FLOAT,
	C_COUNT
};

static const struct fb_case fb_cases[C_COUNT] = {
	[C_RECORDED] = {"recorded", "bench_value", NULL, loop_mixed, 2},
	[C_PASSED] = {"filter passed", "bench_value", "value & 1", loop_odd, 2},
	[C_REJECTED] = {"filter rejected", "bench_value", "value & 1", loop_even, 0},
	[C_MIXED] = {"filter mixed", "bench_value", "value & 1", loop_mixed, 1},
	[C_GT] = {"compare rejected", "bench_value", "value > 2000000000", loop_even, 0},
	[C_COMPLEX] = {"complex rejected", "bench_value", "value & 1 && value > 0 || value == -7",
		       loop_even, 0},
	[C_NRECORDED] = {"string recorded", "bench_named", NULL, loop_named, 2},
	[C_GLOB] = {"glob rejected", "bench_named",
		    "value & 1 || value > 2000000000 || name ~ \"eth*\" && value != 3", loop_named,
		    0},
	[C_RANGE] = {"range rejected", "bench_value", "value >= -2000 && value <= -1000", loop_even,
		     0},
	[C_STREQ] = {"string == rejected", "bench_named", "name == \"eth0\"", loop_named, 0},
	[C_PREFIX] = {"prefix rejected", "bench_named", "name ~ \"eth*\"", loop_named, 0},
	[C_GLOBQ] = {"glob general rejected", "bench_named", "name ~ \"*eth?\"", loop_named, 0},
	[C_RRECORDED] = {"real recorded", "bench_real", NULL, loop_real, 2},
	[C_FLOAT] = {"float rejected", "bench_real", "x > 1e18", loop_real, 0},
};

static int fb_failed;

static uint64_t rejected_now(const char *event)
{
	struct ringtrace_event_info info;
	if (ringtrace_event_lookup(event, &info) < 0)
		return 0;
	return info.rejected;
}

/* Run fn calibrated, check the accounting, return ns per call. */
static double run_case(ringtrace_rb *rb, const struct fb_case *fc, uint64_t fixed_n)
{
	loop_fn fn = fc->loop;
	const char *what = fc->name;
	uint64_t want_hit_per_call2 = fc->want;
	struct ringtrace_rb_stats a, b;
	ringtrace_rb_get_stats(rb, &a);
	uint64_t r0 = rejected_now(fc->event);
	uint64_t n = 1u << 12, total = 0;
	if (fixed_n) {
		uint64_t w = fixed_n < 100000 ? fixed_n : 100000;
		fn(w);
		total = w;
		n = fixed_n;
	} else {
		for (;;) {
			uint64_t t0 = bench_now_ns();
			fn(n);
			uint64_t dt = bench_now_ns() - t0;
			total += n;
			if (dt >= FB_CALIB_MIN_NS) {
				double want = (double)FB_TARGET_NS * (double)n /
					      (double)(dt ? dt : 1);
				n = want < 1000.0 ? 1000 : (uint64_t)want;
				break;
			}
			n *= 4;
		}
	}
	uint64_t t0 = bench_now_ns();
	fn(n);
	uint64_t t1 = bench_now_ns();
	total += n;
	ringtrace_rb_get_stats(rb, &b);
	uint64_t hit = b.hit - a.hit, rej = rejected_now(fc->event) - r0;
	/* want_hit_per_call2: recorded calls per 2 calls (2 all, 1 half, 0 none) */
	uint64_t want_hit = total * want_hit_per_call2 / 2;
	if (hit != want_hit || rej != total - want_hit || b.missed != a.missed) {
		printf("WARNING: %s: %" PRIu64 " calls, %" PRIu64 " recorded (want %" PRIu64
		       "), %" PRIu64 " rejected (want %" PRIu64 "), %" PRIu64 " missed\n",
		       what, total, hit, want_hit, rej, total - want_hit, b.missed - a.missed);
		fb_failed = 1;
	}
	return (double)(t1 - t0) / (double)n;
}

static int set_filter(const char *event, const char *expr)
{
	unsigned col = 0;
	int rc = ringtrace_event_set_filter(event, expr, &col);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench filter: cannot set the filter \"%s\": %s\n",
			expr ? expr : "", ringtrace_last_error());
		return -1;
	}
	return 0;
}

static void fb_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench filter [options]\n"
		"\n"
		"What a filter costs (as the kernel's trace event benchmark asks): ns per call of a one-int event,\n"
		"recorded without a filter, with the filter `value & 1` passing and\n"
		"rejecting every call, half and half, and with a filter the tracepoint\n"
		"cannot evaluate inline. Pinned to one CPU; cases interleaved.\n"
		"\n"
		"options:\n"
		"  --runs R             rounds of all cases; medians are printed (default 5)\n"
		"  --iterations N       calls per measured loop (default: ~0.3 s each)\n"
		"  --cpu C              the CPU to pin to (default: the first usable one)\n"
		"  --case NAME          run only this case, once per run (for an instruction count under\n"
		"                       valgrind: bench/filter_count): recorded, filter-passed,\n"
		"                       filter-rejected, filter-mixed, compare-rejected, complex-rejected,\n"
		"                       string-recorded, glob-rejected, range-rejected,\n"
		"                       string-==-rejected, prefix-rejected, glob-general-rejected,\n"
		"                       real-recorded, float-rejected\n"
		"  -h, --help           this help\n"
		"\n"
		"exit status: 0 ok, 1 accounting mismatch or setup failed, 2 usage error\n");
}

/* The case named `name` (its name with '-' for ' '), or -1. */
static int fb_case_index(const char *name)
{
	for (int k = 0; k < C_COUNT; k++) {
		const char *a = fb_cases[k].name, *b = name;
		while (*a && (*a == *b || (*a == ' ' && *b == '-'))) {
			a++;
			b++;
		}
		if (!*a && !*b)
			return k;
	}
	return -1;
}

/* The medians over the runs, and each rejection against the recording of
 * its own event (only: the one case asked for, or -1). */
static void fb_report(double *v, unsigned runs, int only)
{
	double med[C_COUNT];
	for (int k = 0; k < C_COUNT; k++)
		med[k] = bench_median(&v[k * runs], runs);
	if (only >= 0) {
		printf("%s: %.2f ns\n", fb_cases[only].name, med[only]);
		return;
	}
	for (int k = 0; k < C_COUNT; k++)
		printf("%s: %.2f ns\n", fb_cases[k].name, med[k]);
	printf("filter rejected / recorded: %.2f\n", med[C_REJECTED] / med[C_RECORDED]);
	printf("filter passed / recorded: %.2f\n", med[C_PASSED] / med[C_RECORDED]);
	for (int k = 0; k < C_COUNT; k++) {
		if (fb_cases[k].want || k == C_REJECTED)
			continue;
		const char *ev = fb_cases[k].event;
		int base = strcmp(ev, "bench_named") == 0  ? C_NRECORDED
			   : strcmp(ev, "bench_real") == 0 ? C_RRECORDED
							   : C_RECORDED;
		printf("%s / recorded: %.2f\n", fb_cases[k].name, med[k] / med[base]);
	}
}

#define usage_error(fmt, arg) bench_usage_error("filter", fmt, arg)

enum { OPT_RUNS = 256, OPT_ITERATIONS, OPT_CPU, OPT_CASE };

int filter_bench_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runs", required_argument, NULL, OPT_RUNS},
		{"iterations", required_argument, NULL, OPT_ITERATIONS},
		{"cpu", required_argument, NULL, OPT_CPU},
		{"case", required_argument, NULL, OPT_CASE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned runs = 5;
	uint64_t iterations = 0;
	int cpu = -1, c, only = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *arg = optarg;
		switch (c) {
		case 'h':
			fb_usage(stdout);
			return BENCH_EXIT_OK;
		case OPT_RUNS:
			if (bench_parse_uint(arg, 1, FB_MAX_RUNS, &runs))
				return usage_error("--runs: '%s' is not a count from 1 to 1000",
						   arg);
			break;
		case OPT_ITERATIONS:
			if (bench_parse_u64(arg, 1000, 1ull << 40, &iterations))
				return usage_error(
					"--iterations: '%s' is not a count from 1000 to 2^40", arg);
			break;
		case OPT_CPU: {
			unsigned v;
			if (bench_parse_uint(arg, 0, CPU_SETSIZE - 1, &v))
				return usage_error("--cpu: '%s' is not a CPU number", arg);
			cpu = (int)v;
			break;
		}
		case OPT_CASE:
			only = fb_case_index(arg);
			if (only < 0)
				return usage_error("--case: '%s' is not a case (see --help)", arg);
			break;
		default:
			return bench_getopt_error("filter", c, argv);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (cpu < 0) {
		int cpus[1];
		cpu = bench_usable_cpus(cpus, 1) == 1 ? cpus[0] : -1;
	}
	int perr = bench_pin_self(cpu);
	if (perr) {
		fprintf(stderr, "ringtrace-bench filter: cannot pin to CPU %d: %s\n", cpu,
			strerror(perr));
		return BENCH_EXIT_USAGE;
	}

	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.mode = RINGTRACE_RB_OVERWRITE;
	cfg.page_size = 16u << 10;
	cfg.pool_size = FB_POOL;
	ringtrace_rb *rb;
	int rc = ringtrace_rb_create(&cfg, &rb);
	if (rc < 0) {
		fprintf(stderr, "ringtrace-bench filter: cannot create the ring buffer: %s\n",
			ringtrace_last_error());
		return BENCH_EXIT_FAIL;
	}
	if (ringtrace_event_enable("bench_value") < 0 ||
	    ringtrace_event_enable("bench_named") < 0 || ringtrace_event_enable("bench_real") < 0 ||
	    ringtrace_events_set_buffer(rb) < 0) {
		fprintf(stderr, "ringtrace-bench filter: setup: %s\n", ringtrace_last_error());
		ringtrace_rb_destroy(rb);
		return BENCH_EXIT_FAIL;
	}
	double *v = calloc((size_t)runs * C_COUNT, sizeof(double));
	if (!v)
		return BENCH_EXIT_FAIL;
	for (unsigned r = 0; r < runs && !fb_failed; r++) {
		if (only < 0) {
			printf("run: %u/%u\n", r + 1, runs);
			fflush(stdout);
		}
		for (int k = 0; k < C_COUNT && !fb_failed; k++) {
			const struct fb_case *fc = &fb_cases[k];
			if (only >= 0 && k != only)
				continue;
			if (set_filter(fc->event, fc->filter)) {
				free(v);
				return BENCH_EXIT_FAIL;
			}
			v[k * runs + r] = run_case(rb, fc, iterations);
		}
	}
	set_filter("bench_value", NULL);
	set_filter("bench_named", NULL);
	set_filter("bench_real", NULL);
	ringtrace_events_set_buffer(NULL);
	ringtrace_rb_destroy(rb);
	fb_report(v, runs, only);
	free(v);
	return fb_failed ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
}
