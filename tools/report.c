/*
 * ringtrace report DIR: every event of a trace or a collection, merged by
 * time, one line each (kernel events in ftrace's shape).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "args.h"
#include "base/base.h"
#include "kernel/kernel_api.h"
#include "output.h"
#include "ringtrace/trace.h"
#include "verbs.h"

static const char report_help[] =
	"usage: ringtrace report DIR [--events GLOB] [--from SEC] [--to SEC] [--raw]\n"
	"\n"
	"Print every event of the trace in DIR (or of every trace of the collection\n"
	"DIR: one per process, as ringtrace record -p / -a writes them), merged by\n"
	"timestamp, one line each:\n"
	"  COMM-TID [CPU] SECONDS.MICROS: EVENT: FIELDS\n"
	"Lost events appear as '*** N events lost ***' where they were lost.\n"
	"\n"
	"  --events GLOB  only events whose name matches GLOB (* ? [...])\n"
	"  --from SEC     only events at or after SEC (CLOCK_MONOTONIC seconds)\n"
	"  --to SEC       only events at or before SEC\n"
	"  --raw          print raw clock ticks instead of seconds\n"
	"\n"
	"Control bytes in names and strings are printed as \\xNN.\n"
	"Exits 1 if any damage was found (after printing everything readable).\n";

/*
 * A kernel event as ftrace prints it (src/kernel/kernel_api.h): the prefix of every
 * report line (COMM-TID [CPU] SECONDS.MICROS: EVENT: ), then the fields by
 * the kernel's own print fmt. The length (without a newline; line holds
 * cap + 1 bytes), or -1: then the reader's own line is printed.
 */
static int report_kernel_line(struct kfmt *kf, const struct ringtrace_trace_record *r, int raw,
			      char *line, size_t cap)
{
	char comm[17];
	snprintf(comm, sizeof(comm), "%s", rt_esc(r->comm));
	char when[48];
	if (raw)
		snprintf(when, sizeof(when), "%" PRIu64, r->ts);
	else
		snprintf(when, sizeof(when), "%5" PRIu64 ".%06" PRIu64, r->ns / 1000000000u,
			 r->ns % 1000000000u / 1000u);
	int h = snprintf(line, cap, "%16s-%-7" PRIu32 " [%03" PRIu32 "] %s: %s: ", comm, r->tid,
			 r->cpu, when, rt_esc(ringtrace_trace_event_name(r)));
	if (h < 0 || (size_t)h >= cap)
		return -1;
	int n = kfmt_fields(kf, r, line + h, cap - (size_t)h);
	return n < 0 ? -1 : h + n;
}

/* What report was asked for. */
struct report_opts {
	const char *dir, *glob;
	uint64_t from, to;
	int raw;
};

/* The command line into o: -1, or the exit status. */
static int report_args(int argc, char **argv, struct report_opts *o)
{
	char why[200];
	*o = (struct report_opts){.to = UINT64_MAX};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cmd_is_help(a)) {
			fputs(report_help, stdout);
			return 0;
		}
		if (strcmp(a, "--raw") == 0) {
			o->raw = 1;
		} else if (strcmp(a, "--events") == 0 || strcmp(a, "--from") == 0 ||
			   strcmp(a, "--to") == 0) {
			if (i + 1 >= argc)
				return arg_usage_error("report", "%s needs a value", a);
			const char *v = argv[++i];
			if (a[2] == 'e')
				o->glob = v;
			else if (arg_seconds(v, a[2] == 'f' ? &o->from : &o->to, why, sizeof(why)) <
				 0)
				return arg_usage_error(
					"report", a[2] == 'f' ? "--from: %s" : "--to: %s", why);
		} else if (a[0] == '-' && a[1]) {
			return arg_usage_error("report", "unknown option %s", a);
		} else if (!o->dir) {
			o->dir = a;
		} else {
			return arg_usage_error("report", "unexpected argument %s", a);
		}
	}
	if (!o->dir)
		return arg_usage_error("report", "%s", "missing trace directory");
	if (o->from > o->to)
		return arg_usage_error("report", "%s",
				       "--from is after --to: nothing would be printed");
	return -1;
}

int verb_report(int argc, char **argv)
{
	struct report_opts o;
	int st = report_args(argc, argv, &o);
	if (st >= 0)
		return st;
	const char *dir = o.dir, *glob = o.glob;
	uint64_t from = o.from, to = o.to;
	int raw = o.raw;
	struct coll c;
	if (coll_open(dir, "ringtrace", out_on_error, &c) < 0)
		return 1;
	static char obuf[1 << 20];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	/* per trace and event id: 0 not decided, 1 shown, 2 hidden */
	unsigned char **sel = calloc(c.n, sizeof(*sel));
	struct coll_merge mg;
	size_t cap = (1 << 16) + 256;
	char *line = malloc(cap + 1);
	int oom = !sel || !line || coll_merge_init(&mg, &c) < 0;
	for (uint32_t i = 0; glob && !oom && i < c.n; i++)
		oom = !(sel[i] = calloc(65536, 1));
	/* Kernel traces: their events in ftrace's shape (src/kernel/kernel_api.h). */
	struct kfmt **kf = calloc(c.n, sizeof(*kf));
	struct kcomm *names = kcomm_new();
	oom = oom || !kf || !names;
	uint32_t nkernel = 0;
	for (uint32_t i = 0; !oom && i < c.n; i++)
		if (kfmt_is_kernel(c.t[i])) {
			oom = !(kf[i] = kfmt_open(c.dirs[i], c.t[i], out_on_error, NULL));
			nkernel++;
		}
	if (oom) {
		fprintf(stderr, "ringtrace report: %s: out of memory (preparing the report)\n",
			rt_esc(dir));
		if (kf)
			for (uint32_t i = 0; i < c.n; i++)
				kfmt_close(kf[i]);
		free(kf);
		kcomm_free(names);
		for (uint32_t i = 0; sel && i < c.n; i++)
			free(sel[i]);
		free(sel);
		free(line);
		coll_merge_free(&mg);
		coll_close(&c);
		return 1;
	}
	/* Merged by time (src/analysis/analysis_api.h). */
	struct ringtrace_trace_record *r;
	int k;
	while ((k = coll_merge_next(&mg, &r)) >= 0) {
		int show = r->ns >= from && r->ns <= to;
		if (show && glob && r->kind == RINGTRACE_TRACE_EVENT) {
			unsigned char *cs = r->id < 65536 ? &sel[k][r->id] : NULL;
			if (cs && *cs)
				show = *cs == 1;
			else {
				show = fnmatch(glob, ringtrace_trace_event_name(r), 0) == 0;
				if (cs)
					*cs = show ? 1 : 2;
			}
		}
		struct ringtrace_trace_record kr;
		if (kf[k]) {
			/* (names are learnt from every record, shown or not) */
			kr = *r;
			if (kfmt_task(kf[k], names, r, &kr.tid, &kr.comm) == 0)
				r = &kr;
		} else if (nkernel && r->kind == RINGTRACE_TRACE_EVENT) {
			/* (the user traces name threads for the kernel's lines:
			 * only worth the work when there are kernel lines) */
			kcomm_set(names, r->tid, r->comm);
		}
		int kn = -1;
		if (show && kf[k] && r->kind == RINGTRACE_TRACE_EVENT)
			kn = report_kernel_line(kf[k], r, raw, line, cap);
		if (show && kn >= 0) {
			line[kn] = '\n';
			fwrite(line, 1, (size_t)kn + 1, stdout);
		} else if (show) {
			int n = ringtrace_trace_format_line(c.t[k], r, raw, line, cap);
			if (n >= 0) { /* (else reported, with the file and offset) */
				if ((size_t)n > cap - 1)
					n = (int)(cap - 1);
				line[n] = '\n';
				fwrite(line, 1, (size_t)n + 1, stdout);
			}
		}
	}
	coll_merge_free(&mg);
	for (uint32_t i = 0; i < c.n; i++)
		kfmt_close(kf[i]);
	free(kf);
	kcomm_free(names);
	int rc = c.failed ? 1 : 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ringtrace report: write error: %s\n", strerror(errno));
		rc = 1;
	}
	for (uint32_t i = 0; i < c.n; i++) {
		if (out_trace_errors(c.t[i], c.dirs[i]))
			rc = 1;
		if (sel[i])
			free(sel[i]);
	}
	coll_close(&c);
	free(sel);
	free(line);
	return rc;
}
