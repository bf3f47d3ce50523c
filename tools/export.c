/*
 * ringtrace export --format=json DIR -o FILE: the Chrome/Perfetto trace
 * event format, written by the reader library (src/read/json.c describes
 * it), loadable in Perfetto's UI and chrome://tracing.
 *
 * A collection with a kernel trace (ringtrace record -k, docs/kernel.md):
 * its events on one track per CPU (the library's layout), and, when it has
 * sched_switch, the recorded threads' states (running / runnable /
 * blocked, cat "sched", from the model of `ringtrace sched`) as spans on
 * the threads' own tracks, beside their user events.
 *
 * FILE is written as FILE.XXXXXX beside it (mkostemp: created new, 0600,
 * never through a symbolic link) and renamed over FILE when complete: a
 * name planted at FILE (a symbolic link to a file of someone else's) is
 * never written through, and a half-written export is never left under
 * FILE. An existing FILE that is not a regular file is refused: rename
 * would replace a device node or a link as readily as a file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis_api.h"
#include "base/base.h"
#include "output.h"
#include "ringtrace/trace.h"
#include "verbs.h"

static void export_usage(FILE *f)
{
	fprintf(f, "usage: ringtrace export --format=json DIR -o FILE\n\n"
		   "Write the trace in DIR as Chrome/Perfetto trace event JSON (FILE '-' is\n"
		   "stdout). Events defined with RINGTRACE_EVENT_KIND BEGIN/END/COUNTER become\n"
		   "B/E/C events, the others instant events.\n\n"
		   "A collection recorded with kernel events (ringtrace record -k): the kernel's\n"
		   "events on a process \"kernel\" with a track per CPU (\"CPU N\"); with\n"
		   "sched_switch, the recorded threads' states as complete events (cat \"sched\")\n"
		   "running, runnable and blocked on their own tracks (as ringtrace sched).\n\n"
		   "FILE is made new (mode 0600) and renamed into place when complete; an\n"
		   "existing FILE is replaced only if it is a regular file (a symbolic link\n"
		   "there is refused, never written through).\n");
}

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "ringtrace export: %s\n", rt_esc(msg));
}

static const char *kind(mode_t m)
{
	return S_ISLNK(m)    ? "a symbolic link"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
			     : "not a regular file";
}

/* The temporary file for OUT (its name in tmp): a stream, or NULL with a
 * message. */
static FILE *open_output(const char *out, char *tmp, size_t size)
{
	struct stat st;
	if (lstat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr,
			"ringtrace export: %s is %s, not a regular file: not replaced (-o - "
			"writes to stdout)\n",
			out, kind(st.st_mode));
		return NULL;
	}
	if ((size_t)snprintf(tmp, size, "%s.XXXXXX", out) >= size) {
		fprintf(stderr, "ringtrace export: %s: name too long\n", out);
		return NULL;
	}
	int fd = mkostemp(tmp, O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "ringtrace export: cannot create %s: %s\n", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
	}
	return f;
}

int verb_export(int argc, char **argv)
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
	struct coll cl;
	if (coll_open(argv[optind], "ringtrace export", on_error, &cl) < 0)
		return 1;
	char tmp[4200];
	FILE *f = strcmp(out, "-") == 0 ? stdout : open_output(out, tmp, sizeof(tmp));
	if (!f) {
		coll_close(&cl);
		return 1;
	}
	static char obuf[1 << 16];
	setvbuf(f, obuf, _IOFBF, sizeof(obuf));
	/* (a trace without process information is named after its directory) */
	struct sched_spans *ss = cl.is_collection ? sched_spans_new(&cl, "ringtrace export") : NULL;
	int werr = ringtrace_trace_write_json_spans(
			   cl.t, cl.n, f,
			   cl.is_collection ? cl.names : (const char *const *)&argv[optind],
			   ss ? sched_spans_next : NULL, ss) < 0;
	sched_spans_free(ss);

	if (f != stdout) {
		werr |= fclose(f) != 0;
		if (!werr && rename(tmp, out) != 0) {
			fprintf(stderr, "ringtrace export: renaming %s to %s: %s\n", tmp, out,
				strerror(errno));
			werr = 1;
		}
		if (werr)
			unlink(tmp);
	} else {
		fflush(f);
	}
	uint64_t errors = cl.failed;
	for (uint32_t i = 0; i < cl.n; i++)
		errors += ringtrace_trace_errors(cl.t[i]);
	coll_close(&cl);
	if (werr) {
		fprintf(stderr, "ringtrace export: writing %s failed\n", out);
		return 1;
	}
	return errors ? 1 : 0;
}
