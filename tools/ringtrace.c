/*
 * ringtrace - record and read trace directories.
 *
 *   ringtrace record [options] -- CMD [ARGS...]   (tools/cmd_record.c: -e, -f, --trigger)
 *   ringtrace record [options] -p PID,... | -a [-- CMD]   (tools/cmd_attach.c)
 *   ringtrace ps / list -p PID                    (tools/cmd_ps.c, cmd_attach.c)
 *   ringtrace snapshot PID
 *   ringtrace export --format=json DIR -o FILE    (tools/cmd_export.c)
 *   ringtrace report DIR [--events GLOB] [--from SEC] [--to SEC] [--raw]
 *   ringtrace stat DIR
 *   ringtrace list DIR
 *   ringtrace sched DIR [--all] [--top N]         (tools/cmd_sched.c)
 *
 * Exit status: 0 success, 1 the trace is damaged or unreadable (everything
 * readable is still printed), 2 usage error. Errors go to stderr.
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
#include "commands.h"
#include "kernel/kernel_api.h"
#include "output.h"
#include "ringtrace/trace.h"

static const char *prog = "ringtrace";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s <command> [options]\n"
		"\n"
		"commands:\n"
		"  record [-e EVENTS [-f FILTER]]... [--trigger SPEC]... [--overwrite]\n"
		"         [--buffer-size SIZE] [-o DIR] -- CMD [ARGS...]\n"
		"                 run CMD (linked with libringtrace) and record a trace\n"
		"  record [options] -p PID[,PID...] | -a [-- CMD] [--duration SEC]\n"
		"                 record running programs (one trace each in DIR)\n"
		"  snapshot PID   dump the buffer of a recording program (flight recorder)\n"
		"  recover SHM DIR\n"
		"                 complete the trace of a program that died while recording\n"
		"  report DIR [--events GLOB] [--from SEC] [--to SEC] [--raw]\n"
		"                 print the events of a trace (or a collection), merged by time\n"
		"  stat DIR       per-stream and per-event accounting\n"
		"  list DIR       the events and printf call sites a trace defines\n"
		"  list -- CMD [ARGS...]\n"
		"                 the events a program defines (it is run, tracing off)\n"
		"  list -p PID    the events a running program defines\n"
		"  export --format=json DIR -o FILE\n"
		"                 Chrome/Perfetto trace event JSON\n"
		"  sched DIR [--all] [--top N]\n"
		"                 per thread: running, runnable, blocked, wake-up latency and\n"
		"                 the longest off-CPU stretches (a collection with kernel events)\n"
		"  ps             running programs that can be attached to\n"
		"\n"
		"'%s <command> --help' describes a command.\n",
		prog, prog);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s%s%s: ", prog, cmd ? " " : "", cmd ? cmd : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s%s%s --help'.\n", prog, cmd ? " " : "", cmd ? cmd : "");
	return 2;
}

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog, out_esc(msg));
}

static ringtrace_trace *open_trace(const char *dir)
{
	ringtrace_trace *t;
	if (ringtrace_trace_open(dir, on_error, NULL, &t) < 0) {
		fprintf(stderr, "%s: %s\n", prog, out_esc(ringtrace_trace_open_error()));
		return NULL;
	}
	return t;
}

/* Say how much damage reading found (the messages came on the way): 1 if any. */
static int say_trace_errors(const ringtrace_trace *t, const char *dir)
{
	uint64_t n = ringtrace_trace_errors(t);
	if (n)
		fprintf(stderr, "%s: %s: %" PRIu64 " error%s found in the trace\n", prog, dir, n,
			n == 1 ? "" : "s");
	return n != 0;
}

/* ---- report ---------------------------------------------------------------- */

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
	snprintf(comm, sizeof(comm), "%s", out_esc(r->comm));
	char when[48];
	if (raw)
		snprintf(when, sizeof(when), "%" PRIu64, r->ts);
	else
		snprintf(when, sizeof(when), "%5" PRIu64 ".%06" PRIu64, r->ns / 1000000000u,
			 r->ns % 1000000000u / 1000u);
	int h = snprintf(line, cap, "%16s-%-7" PRIu32 " [%03" PRIu32 "] %s: %s: ", comm, r->tid,
			 r->cpu, when, out_esc(ringtrace_trace_event_name(r)));
	if (h < 0 || (size_t)h >= cap)
		return -1;
	int n = kfmt_fields(kf, r, line + h, cap - (size_t)h);
	return n < 0 ? -1 : h + n;
}

static int cmd_report(int argc, char **argv)
{
	const char *dir = NULL, *glob = NULL;
	uint64_t from = 0, to = UINT64_MAX;
	int raw = 0;
	char why[200];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cmd_is_help(a)) {
			fputs(report_help, stdout);
			return 0;
		}
		if (strcmp(a, "--raw") == 0) {
			raw = 1;
		} else if (strcmp(a, "--events") == 0 || strcmp(a, "--from") == 0 ||
			   strcmp(a, "--to") == 0) {
			if (i + 1 >= argc)
				return usage_error("report", "%s needs a value", a);
			const char *v = argv[++i];
			if (a[2] == 'e')
				glob = v;
			else if (arg_seconds(v, a[2] == 'f' ? &from : &to, why, sizeof(why)) < 0)
				return usage_error("report",
						   a[2] == 'f' ? "--from: %s" : "--to: %s", why);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("report", "unknown option %s", a);
		} else if (!dir) {
			dir = a;
		} else {
			return usage_error("report", "unexpected argument %s", a);
		}
	}
	if (!dir)
		return usage_error("report", "%s", "missing trace directory");
	if (from > to)
		return usage_error("report", "%s",
				   "--from is after --to: nothing would be printed");
	struct coll c;
	if (coll_open(dir, prog, on_error, &c) < 0)
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
			oom = !(kf[i] = kfmt_open(c.dirs[i], c.t[i], on_error, NULL));
			nkernel++;
		}
	if (oom) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	/* Merged by time (collection.h). */
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
		fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
		rc = 1;
	}
	for (uint32_t i = 0; i < c.n; i++) {
		if (say_trace_errors(c.t[i], c.dirs[i]))
			rc = 1;
		if (sel[i])
			free(sel[i]);
	}
	coll_close(&c);
	free(sel);
	free(line);
	return rc;
}

/* ---- stat ------------------------------------------------------------------ */

static const char stat_help[] =
	"usage: ringtrace stat DIR\n"
	"\n"
	"DIR is a trace, or a collection of traces (one per process, as ringtrace\n"
	"record -p / -a writes them): then each trace's, under its name and process,\n"
	"and the collection's totals.\n"
	"Per stream: thread id, thread name, events, events lost (dropped by the\n"
	"writer, overrun by recycled pages), bytes and time span; totals.\n"
	"Events by name: events in the trace, calls the event's filter kept out of\n"
	"the buffer ('rejected'), and the filter the event had when the trace was\n"
	"written. Triggers: how many times each one's action ran ('fired') and\n"
	"matched without running ('skipped': its count used up, or no session).\n"
	"Then the recorder's accounting if the trace has it.\n";

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
 * The arguments of a command that takes one trace directory and no option
 * (stat, list): *t is the opened trace, or the return value is the exit
 * status to return now (help shown, usage error, unreadable trace).
 */
static int open_dir_arg(const char *cmd, const char *help, int argc, char **argv,
			ringtrace_trace **t, const char **dirp)
{
	const char *dir = NULL;
	*t = NULL;
	for (int i = 1; i < argc; i++) {
		if (cmd_is_help(argv[i])) {
			fputs(help, stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return usage_error(cmd, "unknown option %s", argv[i]);
		if (dir)
			return usage_error(cmd, "unexpected argument %s", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return usage_error(cmd, "%s", "missing trace directory");
	*dirp = dir;
	*t = open_trace(dir);
	return *t ? 0 : 1;
}

/* The stat of one trace; its events, drops and overruns added to sum[0..2]. */
static int stat_one(ringtrace_trace *t, const char *dir, uint64_t total[3])
{
	uint64_t *count = calloc(65536, sizeof(uint64_t));
	if (!count)
		return 1;
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

	uint32_t ne = ringtrace_trace_event_count(t);
	struct name_count *nc = calloc(ne + 2, sizeof(*nc));
	uint32_t k = 0;
	if (!nc)
		return 1;
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
		printf("  %-32s %12" PRIu64 " %12" PRIu64, out_esc(nc[i].name), nc[i].n,
		       nc[i].rejected);
		if (nc[i].filter)
			printf("  filter: %s", out_esc(nc[i].filter));
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
			       out_esc(tg->spec));
		}
	}
	uint32_t nst = ringtrace_trace_stat_count(t);
	if (nst) {
		printf("\nrecorder:\n");
		for (uint32_t i = 0; i < nst; i++) {
			const struct ringtrace_trace_stat *st = ringtrace_trace_stat(t, i);
			printf("  %-32s %12" PRIu64 "\n", out_esc(st->key), st->value);
		}
	}
	int rc = 0;
	fflush(stdout);
	if (say_trace_errors(t, dir))
		rc = 1;
	free(nc);
	free(count);
	total[0] += sum.events;
	total[1] += sum.dropped;
	total[2] += sum.overrun;
	return rc;
}

static int cmd_stat(int argc, char **argv)
{
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (cmd_is_help(argv[i])) {
			fputs(stat_help, stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return usage_error("stat", "unknown option %s", argv[i]);
		if (dir)
			return usage_error("stat", "unexpected argument %s", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return usage_error("stat", "%s", "missing trace directory");
	struct coll c;
	if (coll_open(dir, prog, on_error, &c) < 0)
		return 1;
	int rc = c.failed ? 1 : 0;
	uint64_t sum[3] = {0, 0, 0};
	for (uint32_t i = 0; i < c.n; i++) {
		if (c.is_collection) {
			struct ringtrace_trace_process pr;
			printf("%s== %s", i ? "\n" : "", out_esc(c.names[i]));
			if (ringtrace_trace_process(c.t[i], &pr) == 1)
				printf(": pid %u (%s) %s on %s", pr.pid, out_esc(pr.procname),
				       out_esc(pr.executable), out_esc(pr.hostname));
			printf("\n");
		}
		if (stat_one(c.t[i], c.dirs[i], sum))
			rc = 1;
	}
	if (c.is_collection)
		printf("\ncollection %s: %u traces, %" PRIu64 " events, %" PRIu64
		       " dropped, %" PRIu64 " overrun%s\n",
		       out_esc(dir), c.n, sum[0], sum[1], sum[2],
		       c.failed ? " (and traces that could not be read: see above)" : "");
	fflush(stdout);
	coll_close(&c);
	return rc;
}

/* ---- list ------------------------------------------------------------------ */

static const char list_help[] =
	"usage: ringtrace list DIR\n"
	"       ringtrace list -- CMD [ARGS...]\n"
	"       ringtrace list -p PID\n"
	"\n"
	"The events the trace in DIR defines: id, name, kind, fields (name, type,\n"
	"size, signedness) and print format; then the ringtrace_printf call sites.\n"
	"With -- CMD: the events the program CMD (linked with libringtrace) defines;\n"
	"it is run with tracing on and every event disabled, so give it arguments\n"
	"that make it exit soon. With -p PID: the events of a running program (see\n"
	"`ringtrace ps`), asked for by attaching to it with every event disabled and\n"
	"detaching at once; a program recorded already cannot be asked (busy).\n";

static const char *const kind_names[] = {"instant", "begin", "end", "counter"};

static void print_type(const struct ringtrace_field_desc *f)
{
	char sg = f->is_signed ? 's' : 'u';
	switch (f->type) {
	case RINGTRACE_FT_INT:
		printf("%c%u", sg, f->size * 8);
		break;
	case RINGTRACE_FT_FLOAT:
		printf("float%u", f->size * 8);
		break;
	case RINGTRACE_FT_BOOL:
		printf("bool");
		break;
	case RINGTRACE_FT_POINTER:
		printf("pointer");
		break;
	case RINGTRACE_FT_ENUM:
		printf("enum %c%u", sg, f->size * 8);
		break;
	case RINGTRACE_FT_ARRAY:
		printf("%c%u[%u]", sg, f->size * 8, f->count);
		break;
	case RINGTRACE_FT_FLOAT_ARRAY:
		printf("float%u[%u]", f->size * 8, f->count);
		break;
	case RINGTRACE_FT_STRING:
		printf("string (max %u bytes)", f->count);
		break;
	case RINGTRACE_FT_BYTES:
		printf("bytes (max %u)", f->count);
		break;
	default:
		printf("type %u", f->type);
		break;
	}
	printf(" (size %u, %s, align %u)", f->size, f->is_signed ? "signed" : "unsigned", f->align);
}

static int cmd_list(int argc, char **argv)
{
	ringtrace_trace *t;
	const char *dir = NULL;
	int st = open_dir_arg("list", list_help, argc, argv, &t, &dir);
	if (!t)
		return st;
	(void)dir;
	uint32_t ne = ringtrace_trace_event_count(t);
	printf("events (%u):\n", ne);
	for (uint32_t i = 0; i < ne; i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(t, i);
		printf("  %u %s (%s)\n", d->id, out_esc(d->name),
		       d->kind < 4 ? kind_names[d->kind] : "?");
		for (uint32_t k = 0; k < d->nfields; k++) {
			const struct ringtrace_field_desc *f = &d->fields[k];
			printf("      %-20s ", out_esc(f->name));
			print_type(f);
			if (f->type == RINGTRACE_FT_ENUM && f->enm) {
				printf(" {");
				for (uint32_t e = 0; e < f->enm->count; e++)
					printf("%s %s=%" PRId64, e ? "," : "",
					       out_esc(f->enm->values[e].name),
					       f->enm->values[e].value);
				printf(" }");
			}
			putchar('\n');
		}
		printf("      print \"%s\"\n", out_esc(d->print_fmt));
	}
	uint32_t nsite = ringtrace_trace_site_count(t);
	printf("printf sites (%u):\n", nsite);
	for (uint32_t i = 0; i < nsite; i++) {
		const struct ringtrace_trace_site *s = ringtrace_trace_site(t, i);
		printf("  %u \"%s\" args", s->id, out_esc(s->fmt));
		static const char *const tn[] = {"?", "s64", "u64", "double", "string", "pointer"};
		for (uint32_t a = 0; a < s->nargs; a++)
			printf("%s%s", a ? "," : " ", s->types[a] <= 5 ? tn[s->types[a]] : "?");
		if (!s->nargs)
			printf(" none");
		printf(" at %s:%u\n", out_esc(s->file), s->line);
	}
	fflush(stdout);
	ringtrace_trace_close(t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (cmd_is_help(cmd)) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(cmd, "stat") == 0)
		return cmd_stat(argc - 1, argv + 1);
	if (strcmp(cmd, "list") == 0 && argc == 4 && strcmp(argv[2], "-p") == 0)
		return ringtrace_cmd_list_pid(argv[3]);
	if (strcmp(cmd, "list") == 0 && argc > 2 && strcmp(argv[2], "--") == 0)
		return ringtrace_cmd_list_program(argc - 2, argv + 2);
	if (strcmp(cmd, "list") == 0)
		return cmd_list(argc - 1, argv + 1);
	if (strcmp(cmd, "record") == 0)
		return ringtrace_cmd_record(argc - 1, argv + 1);
	if (strcmp(cmd, "snapshot") == 0)
		return ringtrace_cmd_snapshot(argc - 1, argv + 1);
	if (strcmp(cmd, "export") == 0)
		return ringtrace_cmd_export(argc - 1, argv + 1);
	if (strcmp(cmd, "recover") == 0)
		return ringtrace_cmd_recover(argc - 1, argv + 1);
	if (strcmp(cmd, "ps") == 0)
		return ringtrace_cmd_ps(argc - 1, argv + 1);
	if (strcmp(cmd, "sched") == 0)
		return ringtrace_cmd_sched(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
	usage(stderr);
	return 2;
}
