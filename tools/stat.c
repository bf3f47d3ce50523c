/*
 * ringtrace stat DIR: per-stream and per-event accounting of a trace or a
 * collection.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis_api.h"
#include "args.h"
#include "base/base.h"
#include "collect/collect_api.h"
#include "output.h"
#include "ringtrace/trace.h"
#include "verbs.h"

static const char stat_help[] =
	"usage: ringtrace stat DIR\n"
	"\n"
	"DIR is a trace, or a collection of traces (one per process, as ringtrace\n"
	"record -p / -a writes them): then each trace's, under its name and process,\n"
	"and the collection's totals.\n"
	"Per stream: thread id, thread name, events, events lost (dropped by the\n"
	"writer, overrun by recycled pages, and 'unwritten' when the recorder could\n"
	"not write them: the disk full, an I/O error, with the reason), bytes and\n"
	"time span; totals.\n"
	"Events by name: events in the trace, calls the event's filter kept out of\n"
	"the buffer ('rejected'), and the filter the event had when the trace was\n"
	"written. Triggers: how many times each one's action ran ('fired') and\n"
	"matched without running ('skipped': its count used up, or no session).\n"
	"Then the recorder's accounting if the trace has it; if not, and its pool\n"
	"is still in /dev/shm (its recorder was killed, or it is still recording),\n"
	"that the events in the pool are not counted: `ringtrace recover DIR` adds\n"
	"them once the program is gone.\n";

struct name_count {
	const char *name;
	uint64_t n;
	uint64_t rejected;
	const char *filter; /* NULL: none */
};

static int cmp_count(const void *a, const void *b)
{
	const struct name_count *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * A trace without the recorder's final counts, whose pool is still in
 * /dev/shm: its recorder was killed with its program (or is still
 * recording). The events still in that pool are in none of the counts
 * above: say so, and how to add them, rather than let the counts pass
 * for the whole recording. (A trace without final counts and without a
 * pool may be one a program wrote itself, ringtrace_ctf_write_metadata:
 * nothing is said of it.)
 */
static void stat_unfinished(const char *dir)
{
	char shm[300], why[512];
	if (co_find_pool(dir, shm, sizeof(shm), why, sizeof(why)) <= 0)
		return;
	printf("\nrecorder: none: the trace is not finished (its recorder was killed, or it is "
	       "still recording); the events still in its pool %s are not counted above: once "
	       "its program is gone, `ringtrace recover %s` adds them\n",
	       rt_esc(shm), rt_esc(dir));
}

/* "wall clock: FIRST .. LAST UTC": the time span as dates, where the
 * trace says how its clock maps to the wall clock (realtime_offset). */
static void stat_wall(const ringtrace_trace *t, const struct out_totals *sum)
{
	int64_t off;
	if (!sum->events || ringtrace_trace_realtime_offset(t, &off) != 1)
		return;
	printf("wall clock:");
	uint64_t ts[2] = {sum->first_ts, sum->last_ts};
	for (int i = 0; i < 2; i++) {
		__int128 ns = (__int128)ringtrace_trace_ticks_to_ns(t, ts[i]) + off;
		int64_t sec = (int64_t)(ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000);
		time_t tt = (time_t)sec;
		struct tm tm;
		char buf[64];
		if (!gmtime_r(&tt, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
			snprintf(buf, sizeof(buf), "%" PRId64, sec);
		printf("%s%s.%06u", i ? " .. " : " ", buf,
		       (unsigned)((ns - (__int128)sec * 1000000000) / 1000));
	}
	printf(" UTC\n");
}

/* The stat of one trace; its events, drops, overruns and events not
 * written added to sum[0..3]. */
static int stat_one(ringtrace_trace *t, const char *dir, uint64_t total[4])
{
	uint64_t *count = calloc(65536, sizeof(uint64_t));
	uint32_t ne = ringtrace_trace_event_count(t);
	struct name_count *nc = calloc(ne + 2, sizeof(*nc));
	if (!count || !nc) {
		fflush(stdout);
		fprintf(stderr, "ringtrace: %s: out of memory (counting the events)\n",
			rt_esc(dir));
		free(count);
		free(nc);
		return 1;
	}
	uint64_t other = 0;
	struct ringtrace_trace_record r;
	while (ringtrace_trace_next(t, &r) == 1) {
		if (r.kind != RINGTRACE_TRACE_EVENT)
			continue;
		if (r.id < 65536)
			count[r.id]++;
		else
			other++;
	}
	out_stream_table(stdout, t);
	struct out_totals sum;
	out_totals(t, &sum);
	stat_wall(t, &sum);

	uint32_t k = 0;
	/* An event none of whose calls was recorded is listed too when it has
	 * a filter or rejected calls: "all filtered out" is worth seeing. */
	for (uint32_t i = 0; i < ne; i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(t, i);
		if (count[d->id] || d->rejected || d->filter) {
			nc[k].name = d->id == 0 ? "ringtrace_printf" : d->name;
			nc[k].rejected = d->rejected;
			nc[k].filter = d->filter;
			nc[k++].n = count[d->id];
			count[d->id] = 0;
		}
	}
	if (count[0]) {
		nc[k].name = "ringtrace_printf";
		nc[k++].n = count[0];
	}
	qsort(nc, k, sizeof(*nc), cmp_count);
	printf("\n%-34s %12s %12s\n", "events by name:", "events", "rejected");
	for (uint32_t i = 0; i < k; i++) {
		printf("  %-32s %12" PRIu64 " %12" PRIu64, rt_esc(nc[i].name), nc[i].n,
		       nc[i].rejected);
		if (nc[i].filter)
			printf("  filter: %s", rt_esc(nc[i].filter));
		putchar('\n');
	}
	(void)other;
	uint32_t ntg = ringtrace_trace_trigger_count(t);
	if (ntg) {
		printf("\ntriggers:\n  %12s %12s  %s\n", "fired", "skipped", "trigger");
		for (uint32_t i = 0; i < ntg; i++) {
			const struct ringtrace_trace_trigger *tg = ringtrace_trace_trigger(t, i);
			/* The spec is free text of any length: it goes last, after the
			 * numbers, like the filters above, so that the columns stay put. */
			printf("  %12" PRIu64 " %12" PRIu64 "  %s\n", tg->fired, tg->skipped,
			       rt_esc(tg->spec));
		}
	}
	uint32_t nst = ringtrace_trace_stat_count(t);
	if (nst) {
		printf("\nrecorder:\n");
		for (uint32_t i = 0; i < nst; i++) {
			const struct ringtrace_trace_stat *st = ringtrace_trace_stat(t, i);
			printf("  %-32s %12" PRIu64 "\n", rt_esc(st->key), st->value);
		}
	} else {
		stat_unfinished(dir);
	}
	int rc = 0;
	fflush(stdout);
	if (out_trace_errors(t, dir))
		rc = 1;
	free(nc);
	free(count);
	total[0] += sum.events;
	total[1] += sum.dropped;
	total[2] += sum.overrun;
	total[3] += sum.unwritten;
	return rc;
}

int verb_stat(int argc, char **argv)
{
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (cmd_is_help(argv[i])) {
			fputs(stat_help, stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return arg_usage_error("stat", "unknown option %s", argv[i]);
		if (dir)
			return arg_usage_error("stat", "unexpected argument %s", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return arg_usage_error("stat", "%s", "missing trace directory");
	struct coll c;
	if (coll_open(dir, "ringtrace", out_on_error, &c) < 0)
		return 1;
	int rc = c.failed ? 1 : 0;
	uint64_t sum[4] = {0, 0, 0, 0};
	for (uint32_t i = 0; i < c.n; i++) {
		if (c.is_collection) {
			struct ringtrace_trace_process pr;
			printf("%s== %s", i ? "\n" : "", rt_esc(c.names[i]));
			if (ringtrace_trace_process(c.t[i], &pr) == 1)
				printf(": pid %u (%s) %s on %s", pr.pid, rt_esc(pr.procname),
				       rt_esc(pr.executable), rt_esc(pr.hostname));
			printf("\n");
		}
		if (stat_one(c.t[i], c.dirs[i], sum))
			rc = 1;
	}
	if (c.is_collection) {
		char uw[64] = "";
		if (sum[3])
			snprintf(uw, sizeof(uw), ", %" PRIu64 " unwritten", sum[3]);
		printf("\ncollection %s: %u traces, %" PRIu64 " events, %" PRIu64
		       " dropped, %" PRIu64 " overrun%s%s\n",
		       rt_esc(dir), c.n, sum[0], sum[1], sum[2], uw,
		       c.failed ? " (and traces that could not be read: see above)" : "");
	}
	fflush(stdout);
	coll_close(&c);
	return rc;
}
