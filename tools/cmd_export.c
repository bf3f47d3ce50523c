/*
 * ringtrace export --format=json DIR -o FILE: the Chrome/Perfetto trace
 * event format, written by the reader library (src/read/json.c describes
 * it), loadable in Perfetto's UI and chrome://tracing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "output.h"
#include "ringtrace/trace.h"

static void export_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace export --format=json DIR -o FILE\n\n"
		   "Write the trace in DIR as Chrome/Perfetto trace event JSON (FILE '-' is\n"
		   "stdout). Events defined with RINGTRACE_EVENT_KIND BEGIN/END/COUNTER become\n"
		   "B/E/C events, the others instant events.\n");
}

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "ringtrace export: %s\n", out_esc(msg));
}

int ringtrace_cmd_export(int argc, char **argv)
{
	const char *format = NULL, *out = NULL;
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			export_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "ringtrace export: unknown option or missing value: %s\n",
				argv[optind - 1]);
			export_usage(stderr);
			return 2;
		}
	}
	if (!format || strcmp(format, "json") != 0) {
		fprintf(stderr, "ringtrace export: --format=json is required (the only format)\n");
		return 2;
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr,
			"ringtrace export: usage: ringtrace export --format=json DIR -o FILE\n");
		return 2;
	}
	ringtrace_trace *t;
	if (ringtrace_trace_open(argv[optind], on_error, NULL, &t) < 0) {
		fprintf(stderr, "ringtrace export: %s\n", out_esc(ringtrace_trace_open_error()));
		return 1;
	}
	FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
	if (!f) {
		fprintf(stderr, "ringtrace export: cannot create %s: %s\n", out, strerror(errno));
		ringtrace_trace_close(t);
		return 1;
	}
	static char obuf[1 << 16];
	setvbuf(f, obuf, _IOFBF, sizeof(obuf));
	int werr = ringtrace_trace_write_json(t, f, argv[optind]) < 0;

	if (f != stdout)
		werr |= fclose(f) != 0;
	else
		fflush(f);
	uint64_t errors = ringtrace_trace_errors(t);
	ringtrace_trace_close(t);
	if (werr) {
		fprintf(stderr, "ringtrace export: writing %s failed\n", out);
		return 1;
	}
	return errors ? 1 : 0;
}
