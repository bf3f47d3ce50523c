/*
 * ringtrace-bench report: how fast does `ringtrace report` read a trace?
 *
 * T threads (default 4) emit N one-int events (bench_int, default 10 M)
 * as fast as they can into an in-process session (discard mode) writing a
 * trace directory (default on tmpfs, /dev/shm). The metadata's `stat hit`
 * and `stat missed` lines must show every event recorded; if the default
 * buffer dropped some, the trace is generated again with a 256 MiB pool.
 *
 * Then the `ringtrace` tool next to this binary is timed reading the trace:
 * `ringtrace report DIR` and `ringtrace stat DIR`, stdout to /dev/null,
 * median of 3 runs each. If babeltrace2 is on the PATH, its text output
 * (`babeltrace2 DIR`) and its counter sink (`babeltrace2 DIR -c
 * sink.utils.counter`) are timed once each, as a reference.
 *
 * Output, one `key: value` per line: events, trace bytes, the rate of each
 * reader in M events/s, the report/babeltrace2-text ratio and
 * `target (>= 5M events/s): met` or `NOT met` (for `ringtrace report`).
 * The trace directory is removed at the end.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_trace.h"

#define REPORT_RUNS 3
#define REPORT_TARGET_MEPS 5.0

struct report_opts {
	uint64_t events;
	unsigned threads;
	const char *dir;
};

static double meps(uint64_t events, double secs)
{
	return (double)events / secs / 1e6;
}

static void report_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace-bench report [options]\n\n"
		   "Records a trace of N one-int events from T threads, then times the\n"
		   "`ringtrace` tool next to this binary reading it (`report` and `stat`,\n"
		   "median of 3 runs) and, if installed, babeltrace2 (text and counter sinks,\n"
		   "one run each). Target: `ringtrace report` >= 5 M events/s.\n\n"
		   "options:\n"
		   "  --events N      events to record (default 10000000)\n"
		   "  --threads T     threads emitting them (default 4)\n"
		   "  --dir DIR       trace directory, removed first and at the end\n"
		   "                  (default /dev/shm/ringtrace-bench-report)\n"
		   "  -h, --help      this help\n");
}

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int report_parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{"events", required_argument, NULL, 'e'},
		{"threads", required_argument, NULL, 't'},
		{"dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			report_usage(stdout);
			return BENCH_EXIT_OK;
		case 'e':
			if (bench_parse_u64(optarg, 1, 1000000000000ull, &o->events))
				return bench_usage_error("report", "--events: '%s' is not a count",
							 optarg);
			break;
		case 't':
			if (bench_parse_uint(optarg, 1, 1024, &o->threads))
				return bench_usage_error(
					"report", "--threads: '%s' is not in 1..1024", optarg);
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= PATH_MAX)
				return bench_usage_error(
					"report", "--dir: '%s' is not a usable directory name",
					optarg);
			o->dir = optarg;
			break;
		default: /* ':' missing value, '?' unknown option */
			return bench_getopt_error("report", c, argv);
		}
	}
	if (optind < argc)
		return bench_usage_error("report", "unexpected argument '%s'", argv[optind]);
	return -1;
}

/* babeltrace2 as a reference, one run each, where it is installed. */
static void report_babeltrace(char *dir, uint64_t events, double t_report)
{
	if (bench_in_path("babeltrace2")) {
		char *bt_text[] = {"babeltrace2", dir, NULL};
		char *bt_counter[] = {"babeltrace2", dir, "-c", "sink.utils.counter", NULL};
		/* its stderr is dropped: it warns about the header's len and pad fields */
		double t_text = bench_time_command("report", bt_text, 1, 1, NULL, 0, NULL);
		if (isnan(t_text))
			printf("babeltrace2 text: failed\n");
		else
			printf("babeltrace2 text: %.2f M events/s (%.3f s)\n", meps(events, t_text),
			       t_text);
		fflush(stdout);
		double t_counter = bench_time_command("report", bt_counter, 1, 1, NULL, 0, NULL);
		if (isnan(t_counter))
			printf("babeltrace2 counter: failed\n");
		else
			printf("babeltrace2 counter: %.2f M events/s (%.3f s)\n",
			       meps(events, t_counter), t_counter);
		if (isnan(t_text))
			printf("ratio report/babeltrace2 text: n/a\n");
		else
			printf("ratio report/babeltrace2 text: %.2f\n", t_text / t_report);
	} else {
		printf("babeltrace2: not installed (no reference)\n");
	}
}

int report_bench_main(int argc, char **argv)
{
	struct report_opts o = {10000000ull, 4, "/dev/shm/ringtrace-bench-report"};
	int status = report_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;

	char tool[PATH_MAX + 16];
	if (bench_find_sibling("report", "ringtrace", tool, sizeof(tool)) < 0)
		return BENCH_EXIT_FAIL;

	/* (1) The trace: default buffer, then a 256 MiB pool if it dropped events. */
	if (bench_record_ints("report", o.dir, o.events, o.threads) != 0)
		goto fail;
	printf("events: %" PRIu64 "\n", o.events);
	printf("trace bytes: %" PRIu64 "\n", bench_tree_bytes(o.dir));
	fflush(stdout);

	/* (2), (3) The tool, median of 3 runs. */
	char *dir = (char *)o.dir;
	char *report_argv[] = {tool, "report", dir, NULL};
	char *stat_argv[] = {tool, "stat", dir, NULL};
	double t_report = bench_time_median("report", report_argv, REPORT_RUNS);
	if (isnan(t_report))
		goto fail;
	printf("ringtrace report: %.2f M events/s (%.3f s)\n", meps(o.events, t_report), t_report);
	fflush(stdout);
	double t_stat = bench_time_median("report", stat_argv, REPORT_RUNS);
	if (isnan(t_stat))
		goto fail;
	printf("ringtrace stat: %.2f M events/s\n", meps(o.events, t_stat));
	fflush(stdout);

	/* (4) babeltrace2 as a reference, one run each. */
	report_babeltrace(dir, o.events, t_report);

	int met = meps(o.events, t_report) >= REPORT_TARGET_MEPS;
	printf("target (>= 5M events/s): %s\n", met ? "met" : "NOT met");
	bench_remove_tree("report", o.dir);
	return BENCH_EXIT_OK;

fail:
	bench_remove_tree("report", o.dir);
	return BENCH_EXIT_FAIL;
}
