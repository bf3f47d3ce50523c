/*
 * ringtrace-bench: benchmarks of ringtrace, one subcommand each.
 *
 *   ringtrace-bench rb [options]   ring buffer hammer (kernel
 *                                  ring_buffer_benchmark reproduction)
 *   ringtrace-bench tp [options]   tracepoint microbenchmark (Linux Kernel
 *                                  Markers)
 *   ringtrace-bench event [options] trace event benchmark (kernel
 *                                  trace_benchmark.c)
 *   ringtrace-bench filter [options] cost of a filtered event, passed and
 *                                  rejected (the kernel's filter experiments)
 *   ringtrace-bench record [options] recorder throughput without loss
 *   ringtrace-bench report [options] trace reading speed of `ringtrace
 *                                  report`/`stat` vs babeltrace2
 *   ringtrace-bench start [options] a session's start and its first events
 *                                  against the steady state
 *   ringtrace-bench query [options] the SQL layer: import speed, queries on
 *                                  virtual against native tables, against
 *                                  babeltrace2's Python route into SQLite
 *   ringtrace-bench --help         this list
 *   ringtrace-bench CMD --help     options of CMD
 *
 * To add a subcommand: write `int NAME_bench_main(int argc, char **argv)`
 * (argv[0] is the subcommand name), declare it in bench.h, add it to
 * `commands` below and its source file to bench/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct bench_command {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *summary;
};

static const struct bench_command commands[] = {
	{"rb", rb_bench_main,
	 "hammer the ring buffer with 10-byte events (kernel ring_buffer_benchmark)"},
	{"tp", tp_bench_main,
	 "cost of a disabled, probed, recorded tracepoint and of binary printf (markers)"},
	{"event", event_bench_main,
	 "time each trace event and record the statistics in the next (trace_benchmark)"},
	{"filter", filter_bench_main,
	 "cost of an event whose filter passes it or rejects it (`value & 1`)"},
	{"record", record_bench_main,
	 "can the recorder write 20 M events/s to a trace directory without loss?"},
	{"report", report_bench_main,
	 "how fast do `ringtrace report` and `stat` (and babeltrace2) read a trace?"},
	{"start", start_bench_main,
	 "what a session's start and its first events cost against the steady state"},
	{"stall", stall_bench_main,
	 "what a writer pays per call while its recorder is stalled, against running"},
	{"query", query_bench_main,
	 "how fast does a trace become SQL tables, and what do queries on them cost?"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace-bench <command> [options]\n"
		   "       ringtrace-bench <command> --help\n"
		   "       ringtrace-bench --help\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nexit status: 0 ok, 1 measurement or check failed, 2 usage error\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "ringtrace-bench: missing command\n");
		usage(stderr);
		return BENCH_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return BENCH_EXIT_OK;
	}
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].main(argc - 1, argv + 1);

	if (cmd[0] == '-')
		fprintf(stderr, "ringtrace-bench: unknown option '%s'\n", cmd);
	else
		fprintf(stderr, "ringtrace-bench: unknown command '%s'\n", cmd);
	fprintf(stderr, "Try 'ringtrace-bench --help'.\n");
	return BENCH_EXIT_USAGE;
}
