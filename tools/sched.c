/*
 * ringtrace sched DIR: the scheduling view of a collection that `ringtrace
 * record -k sched:sched_switch -k sched:sched_wakeup` wrote (docs/kernel.md,
 * "The scheduling view"): per thread, time running, runnable and blocked,
 * wake-up latencies, and its longest off-CPU stretches with its user
 * events just before and after each. The states are the model's
 * (src/analysis/analysis_api.h), fed the kernel trace; the user traces say which threads
 * are the recorded programs' and give the events around the stretches,
 * all read in one pass merged by time.
 *
 * (The thread states `ringtrace export` adds to its JSON are the analysis
 * layer's: src/analysis/sched_spans.c.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "args.h"
#include "base/base.h"
#include "output.h"
#include "verbs.h"

static const char *prog = "ringtrace sched";

static const char sched_help[] =
	"usage: ringtrace sched DIR [--all] [--top N]\n"
	"\n"
	"The scheduling view of DIR, a collection recorded with kernel events:\n"
	"  ringtrace record -k sched:sched_switch -k sched:sched_wakeup -o DIR -- CMD\n"
	"Per thread: its time running (switched in until switched out), runnable\n"
	"(woken up, or preempted, until switched in) and blocked (switched out\n"
	"asleep until woken up), in ms and in % of the time the kernel trace saw it\n"
	"(from its first scheduling event; 'unknown': after lost kernel events, or\n"
	"between events that contradict each other); its wake-up latencies\n"
	"(wake-up to switch-in: count, p50, p99, max in us; p50 and p99 within 3%);\n"
	"then its longest off-CPU stretches (switched out until back in), each with\n"
	"the thread's user events just before and just after it.\n"
	"\n"
	"Threads: those of the recorded programs (the threads of DIR's user traces,\n"
	"and their processes' main threads), with the trace each belongs to; every\n"
	"thread when DIR is the kernel trace alone (DIR/kernel).\n"
	"\n"
	"  --all     every thread the kernel trace names (unless recorded with\n"
	"            --kernel-all, it holds other threads' events only where they meet\n"
	"            the recorded ones: their states are mostly unknown)\n"
	"  --top N   off-CPU stretches per thread (default 5, at most 100; 0: none)\n"
	"\n"
	"Thread names and event names from the trace are printed with control\n"
	"bytes as \\xNN. Exits 1 if DIR has no kernel trace with sched_switch events,\n"
	"or if any damage was found (after printing everything readable).\n";

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog, rt_esc(msg));
}

/* A time as report prints it: SECONDS.MICROS of CLOCK_MONOTONIC. */
static const char *when(uint64_t ns, char *buf, size_t n)
{
	snprintf(buf, n, "%" PRIu64 ".%06" PRIu64, ns / 1000000000, ns % 1000000000 / 1000);
	return buf;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* The threads shown, in order: the recorded programs' first (by trace,
 * then tid), then the others by tid. */
static int cmp_thread(const void *a, const void *b)
{
	const struct sm_thread *x = *(const struct sm_thread *const *)a;
	const struct sm_thread *y = *(const struct sm_thread *const *)b;
	int xr = x->tag >= 0, yr = y->tag >= 0;
	if (xr != yr)
		return xr ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void print_user_event(const char *what, const struct sm_user_event *u, uint64_t ref,
			     int after)
{
	char b[40];
	if (!u->name) {
		printf("            %s none\n", what);
		return;
	}
	uint64_t d = after ? (u->ns > ref ? u->ns - ref : 0) : (ref > u->ns ? ref - u->ns : 0);
	printf("            %s %s at %s (%.3f ms %s)\n", what, rt_esc(u->name),
	       when(u->ns, b, sizeof(b)), ms(d), after ? "after it" : "before it");
}

static void print_stretches(const struct sm_thread *t, const char *trace)
{
	char b1[40], b2[40];
	printf("  %" PRId64 " %s%s%s%s\n", t->tid, rt_esc(t->comm), trace ? " [" : "",
	       trace ? rt_esc(trace) : "", trace ? "]" : "");
	for (uint32_t i = 0; i < t->ntop; i++) {
		const struct sm_stretch *s = &t->top[i];
		printf("    %2u %10.3f ms  %s .. %s  ", i + 1, ms(s->end - s->start),
		       when(s->start, b1, sizeof(b1)), when(s->end, b2, sizeof(b2)));
		if (s->preempted)
			printf("runnable (preempted)");
		else if (s->wake)
			printf("blocked %.3f ms, runnable %.3f ms", ms(s->wake - s->start),
			       ms(s->end - s->wake));
		else if (s->open)
			printf("blocked");
		else
			printf("blocked (no wake-up recorded)");
		printf("%s\n", s->open ? ", still off the CPU at the end of the trace" : "");
		print_user_event("before:", &s->before, s->start, 0);
		if (!s->open)
			print_user_event("after: ", &s->after, s->end, 1);
	}
}

/* The latency column: us with one decimal, "-" without samples. */
static void print_us(uint64_t ns, int have)
{
	if (have)
		printf(" %9.1f", (double)ns / 1e3);
	else
		printf(" %9s", "-");
}

static int sched_print(struct sm_model *m, const struct coll *c, int kt, int all, uint32_t top)
{
	const struct sm_stats *st = sm_stats(m);
	uint32_t n = sm_count(m), nshow = 0, nkernel = 0;
	const struct sm_thread **show = calloc(n ? n : 1, sizeof(*show));
	if (!show) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct sm_thread *t = sm_at(m, i);
		nkernel += t->events > 0;
		if (t->tag >= 0 || (all && t->events))
			show[nshow++] = t;
	}
	qsort(show, nshow, sizeof(*show), cmp_thread);

	char b1[40], b2[40];
	printf("kernel trace %s: %.6f s (%s .. %s), %" PRIu64 " sched_switch, %" PRIu64
	       " wake-ups\n",
	       rt_esc(c->dirs[kt]), (double)(st->last_ns - st->first_ns) / 1e9,
	       when(st->first_ns, b1, sizeof(b1)), when(st->last_ns, b2, sizeof(b2)), st->switches,
	       st->wakeups);
	if (all && c->n == 1)
		printf("threads: all %u the kernel trace names (no user trace beside it)\n",
		       nkernel);
	else if (all)
		printf("threads: all %u the kernel trace names\n", nkernel);
	else
		printf("threads: %u of the recorded programs (of %u the kernel trace names; --all "
		       "shows them all)\n",
		       nshow, nkernel);
	printf("\n%8s %11s %5s %11s %5s %11s %5s %11s %5s %8s %9s %9s %9s  %s\n", "tid",
	       "running_ms", "%", "runnable_ms", "%", "blocked_ms", "%", "unknown_ms", "%",
	       "wakeups", "p50_us", "p99_us", "max_us", "comm [trace]");
	for (uint32_t i = 0; i < nshow; i++) {
		const struct sm_thread *t = show[i];
		uint64_t span = 0;
		for (int s = 0; s < SM_NSTATES; s++)
			span += t->ns[s];
		double pc = span ? 100.0 / (double)span : 0;
		printf("%8" PRId64, t->tid);
		static const int order[4] = {SM_RUNNING, SM_RUNNABLE, SM_BLOCKED, SM_UNKNOWN};
		for (int s = 0; s < 4; s++)
			printf(" %11.3f %5.1f", ms(t->ns[order[s]]), (double)t->ns[order[s]] * pc);
		printf(" %8" PRIu64, t->lat_count);
		print_us(sm_latency_quantile(t, 0.5), t->lat_count > 0);
		print_us(sm_latency_quantile(t, 0.99), t->lat_count > 0);
		print_us(t->lat_max, t->lat_count > 0);
		printf("  %s", t->comm[0] ? rt_esc(t->comm) : "?");
		if (t->tag >= 0)
			printf(" [%s]", rt_esc(c->names[t->tag]));
		if (!t->events)
			printf(" (no scheduling events)");
		putchar('\n');
	}
	if (top) {
		int any = 0;
		for (uint32_t i = 0; i < nshow; i++) {
			if (!show[i]->ntop)
				continue;
			if (!any++)
				printf("\nlongest off-CPU stretches (up to %u per thread):\n", top);
			print_stretches(show[i], show[i]->tag >= 0 ? c->names[show[i]->tag] : NULL);
		}
	}

	/* What makes the numbers less than exact, said after them. */
	uint64_t kmissed = 0, nowake = 0, incons = 0;
	for (uint32_t i = 0; i < ringtrace_trace_stat_count(c->t[kt]); i++) {
		const struct ringtrace_trace_stat *s = ringtrace_trace_stat(c->t[kt], i);
		if (strcmp(s->key, "missed") == 0 || strcmp(s->key, "overrun") == 0)
			kmissed += s->value;
	}
	for (uint32_t i = 0; i < nshow; i++) {
		nowake += show[i]->no_wakeup;
		incons += show[i]->inconsistent;
	}
	int notes = 0;
#define NOTE (notes++ ? "" : "\n")
	if (kmissed || st->lost_marks)
		printf("%snote: the kernel lost %" PRIu64 " events (%" PRIu64
		       " places marked): every thread's state is unknown from a loss to its next "
		       "event (a larger --kernel-buffer keeps more)\n",
		       NOTE, kmissed > st->lost_events ? kmissed : st->lost_events, st->lost_marks);
	if (!sched_trace_defines(c->t[kt], "sched_wakeup") &&
	    !sched_trace_defines(c->t[kt], "sched_waking"))
		printf("%snote: no sched_wakeup in the kernel trace: no wake-up latencies, and the "
		       "off-CPU time of a sleep counts as blocked (record with -k "
		       "sched:sched_wakeup)\n",
		       NOTE);
	else if (nowake)
		printf("%snote: %" PRIu64 " switch-ins of a blocked thread had no wake-up before "
		       "them: their off-CPU time counts as blocked\n",
		       NOTE, nowake);
	if (incons)
		printf("%snote: %" PRIu64 " scheduling events contradict the state before them (an "
		       "event was missed or not recorded): the time in between counts as unknown\n",
		       NOTE, incons);
	if (st->out_of_order)
		printf("%snote: %" PRIu64 " kernel events out of time order\n", NOTE,
		       st->out_of_order);
	if (st->undecodable)
		printf("%snote: %" PRIu64 " scheduling events whose fields could not be read "
		       "(left out)\n",
		       NOTE, st->undecodable);
	if (st->beyond_cap)
		printf("%snote: more than %u threads: %" PRIu64 " events of the others left out\n",
		       NOTE, SM_MAX_THREADS, st->beyond_cap);
	if (st->oom)
		printf("%snote: out of memory: some latencies or stretches are missing\n", NOTE);
#undef NOTE
	free(show);
	return 0;
}

/* The command line: -1 with *dir, *all and *top, or the exit status. */
static int sched_args(int argc, char **argv, const char **dir, int *all, uint64_t *top)
{
	char why[200];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cmd_is_help(a)) {
			fputs(sched_help, stdout);
			return 0;
		}
		if (strcmp(a, "--all") == 0) {
			*all = 1;
		} else if (strcmp(a, "--top") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr,
					"%s: --top needs a value\nTry 'ringtrace sched --help'.\n",
					prog);
				return 2;
			}
			if (arg_u64(argv[++i], SM_TOP_MAX, top, why, sizeof(why)) < 0) {
				fprintf(stderr, "%s: --top: %s\nTry 'ringtrace sched --help'.\n",
					prog, why);
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "%s: unknown option %s\nTry 'ringtrace sched --help'.\n",
				prog, a);
			return 2;
		} else if (!*dir) {
			*dir = a;
		} else {
			fprintf(stderr,
				"%s: unexpected argument %s\nTry 'ringtrace sched --help'.\n", prog,
				a);
			return 2;
		}
	}
	if (!*dir) {
		fprintf(stderr, "%s: missing trace directory\nTry 'ringtrace sched --help'.\n",
			prog);
		return 2;
	}
	return -1;
}

/*
 * One pass over every trace merged by time (as report: the earliest next
 * record first; one clock conversion for the whole collection): the
 * kernel's records (trace kt) drive the model, the user events give each
 * thread's trace and the events around its off-CPU stretches. 0, or -1
 * out of memory.
 */
static int sched_model_pass(struct sm_model *m, const struct coll *c, int kt)
{
	struct coll_merge mg;
	if (coll_merge_init(&mg, c) < 0)
		return -1;
	struct ringtrace_trace_record *r;
	int k;
	while ((k = coll_merge_next(&mg, &r)) >= 0) {
		if (k == kt) {
			sm_kernel_record(m, r);
		} else if (r->kind == RINGTRACE_TRACE_EVENT) {
			sm_user_event(m, r->ns, r->tid, ringtrace_trace_event_name(r));
			struct sm_thread *t = sm_find(m, r->tid);
			if (t && t->tag < 0)
				t->tag = k;
			if (t && !t->comm[0] && r->comm) /* (until the kernel names it) */
				snprintf(t->comm, sizeof(t->comm), "%s", r->comm);
		}
	}
	coll_merge_free(&mg);
	sm_finish(m, sm_stats(m)->last_ns);
	/* the programs' main threads: theirs even if they recorded nothing */
	for (uint32_t i = 0; i < c->n; i++) {
		struct ringtrace_trace_process pr;
		struct sm_thread *t;
		if ((int)i != kt && ringtrace_trace_process(c->t[i], &pr) == 1 && pr.pid &&
		    (t = sm_find(m, pr.pid)) && t->tag < 0)
			t->tag = (int32_t)i;
	}
	return 0;
}

int verb_sched(int argc, char **argv)
{
	const char *dir = NULL;
	int all = 0;
	uint64_t top = 5;
	int st = sched_args(argc, argv, &dir, &all, &top);
	if (st >= 0)
		return st;
	struct coll c;
	if (coll_open(dir, prog, on_error, &c) < 0)
		return 1;
	int kt = sched_kernel_trace(&c);
	if (kt < 0) {
		fprintf(stderr,
			"%s: %s holds no kernel trace (record with -k sched:sched_switch -k "
			"sched:sched_wakeup)\n",
			prog, rt_esc(dir));
		coll_close(&c);
		return 1;
	}
	if (!sched_trace_defines(c.t[kt], "sched_switch")) {
		fprintf(stderr,
			"%s: the kernel trace %s has no sched_switch events (record with -k "
			"sched:sched_switch -k sched:sched_wakeup)\n",
			prog, rt_esc(c.dirs[kt]));
		coll_close(&c);
		return 1;
	}
	/* the kernel trace alone (DIR/kernel): no thread is a recorded
	 * program's, so every one is shown */
	if (c.n == 1)
		all = 1;
	struct sm_model *m = sm_new(0, (uint32_t)top);
	if (!m || sched_model_pass(m, &c, kt) < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		sm_free(m);
		coll_close(&c);
		return 1;
	}
	int rc = 0;
	if (!sm_stats(m)->switches) {
		fprintf(stderr,
			"%s: the kernel trace %s has no sched_switch events (record with -k "
			"sched:sched_switch -k sched:sched_wakeup)\n",
			prog, rt_esc(c.dirs[kt]));
		rc = 1;
	} else {
		static char obuf[1 << 16];
		setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
		rc = sched_print(m, &c, kt, all, (uint32_t)top);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
			rc = 1;
		}
	}
	if (c.failed)
		rc = 1;
	for (uint32_t i = 0; i < c.n; i++) {
		uint64_t e = ringtrace_trace_errors(c.t[i]);
		if (e) {
			fprintf(stderr, "%s: %s: %" PRIu64 " error%s found in the trace\n", prog,
				rt_esc(c.dirs[i]), e, e == 1 ? "" : "s");
			rc = 1;
		}
	}
	sm_free(m);
	coll_close(&c);
	return rc;
}
