/*
 * The thread states of a collection's recorded threads as JSON spans
 * (analysis_api.h): the scheduling model fed the collection's kernel
 * trace, its intervals queued and given to the JSON writer one by one.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "base/base.h"
#include "kernel/kernel_api.h"

int sched_kernel_trace(const struct coll *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (kfmt_is_kernel(c->t[i]))
			return (int)i;
	return -1;
}

int sched_trace_defines(const ringtrace_trace *t, const char *name)
{
	for (uint32_t i = 0; i < ringtrace_trace_event_count(t); i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(t, i);
		if (d->name && strcmp(d->name, name) == 0)
			return 1;
	}
	return 0;
}

struct sched_span_item {
	uint64_t start, end;
	uint32_t pid, tid;
	uint8_t state;
};

struct sched_spans {
	const struct coll *c;
	int kt;
	char *kdir;
	const char *prog;
	ringtrace_trace *kernel; /* a handle of its own */
	struct sm_model *m;
	uint32_t *pid_of; /* the JSON pid of each trace */
	int started, finished, failed;
	struct sched_span_item *q; /* the states ended, not yet given */
	size_t nq, head, cap;
};

/* The model's interval callback: the recorded threads' states, queued. */
static void span_queue(void *arg, const struct sm_thread *t, enum sm_state state, uint64_t start,
		       uint64_t end)
{
	struct sched_spans *s = arg;
	if (t->tag < 0 || s->failed)
		return;
	if (s->nq == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 256;
		struct sched_span_item *q = realloc(s->q, nc * sizeof(*q));
		if (!q) {
			s->failed = 1;
			return;
		}
		s->q = q;
		s->cap = nc;
	}
	s->q[s->nq++] = (struct sched_span_item){start, end, s->pid_of[t->tag], (uint32_t)t->tid,
						 (uint8_t)state};
}

struct sched_spans *sched_spans_new(const struct coll *c, const char *pr)
{
	int kt = sched_kernel_trace(c);
	if (kt < 0 || !sched_trace_defines(c->t[kt], "sched_switch"))
		return NULL;
	struct sched_spans *s = calloc(1, sizeof(*s));
	if (!s || !(s->pid_of = calloc(c->n, sizeof(*s->pid_of))) ||
	    !(s->kdir = strdup(c->dirs[kt])) || !(s->m = sm_new(0, 0))) {
		fprintf(stderr, "%s: out of memory (thread states left out)\n", pr);
		sched_spans_free(s);
		return NULL;
	}
	s->c = c;
	s->kt = kt;
	s->prog = pr;
	/* (the pid the JSON writer gives each trace: ringtrace/trace.h) */
	for (uint32_t i = 0; i < c->n; i++) {
		struct ringtrace_trace_process p;
		int known = ringtrace_trace_process(c->t[i], &p) == 1 && p.pid;
		s->pid_of[i] = known ? p.pid : i + 1;
	}
	sm_set_interval_fn(s->m, span_queue, s);
	return s;
}

void sched_spans_free(struct sched_spans *s)
{
	if (!s)
		return;
	if (s->kernel)
		ringtrace_trace_close(s->kernel);
	sm_free(s->m);
	free(s->pid_of);
	free(s->kdir);
	free(s->q);
	free(s);
}

/* The recorded threads, once the writer has read the user traces. */
static int spans_start(struct sched_spans *s)
{
	const struct coll *c = s->c;
	for (uint32_t i = 0; i < c->n; i++) {
		if ((int)i == s->kt)
			continue;
		struct ringtrace_trace_process p;
		struct sm_thread *t;
		for (uint32_t k = 0; k < ringtrace_trace_stream_count(c->t[i]); k++) {
			const struct ringtrace_trace_stream_info *si = ringtrace_trace_stream(
				c->t[i], k);
			if (si->events && (t = sm_get(s->m, si->tid)) && t->tag < 0)
				t->tag = (int32_t)i;
		}
		if (ringtrace_trace_process(c->t[i], &p) == 1 && p.pid &&
		    (t = sm_get(s->m, p.pid)) && t->tag < 0)
			t->tag = (int32_t)i;
	}
	/* (damage in it is said by the writer, which reads the same trace) */
	if (ringtrace_trace_open(s->kdir, NULL, NULL, &s->kernel) < 0) {
		fprintf(stderr, "%s: %s\n", s->prog, rt_esc(ringtrace_trace_open_error()));
		return -1;
	}
	return 0;
}

int sched_spans_next(void *arg, struct ringtrace_json_span *span)
{
	static const char *const names[] = {"unknown", "running", "runnable", "blocked"};
	struct sched_spans *s = arg;
	if (!s->started) {
		s->started = 1;
		if (spans_start(s) < 0)
			return -RINGTRACE_EINVAL;
	}
	while (s->head == s->nq && !s->finished && !s->failed) {
		s->head = s->nq = 0;
		struct ringtrace_trace_record r;
		if (ringtrace_trace_next(s->kernel, &r) == 1) {
			sm_kernel_record(s->m, &r);
		} else {
			sm_finish(s->m, sm_stats(s->m)->last_ns);
			s->finished = 1;
		}
	}
	if (s->failed) {
		fprintf(stderr, "%s: out of memory writing the thread states\n", s->prog);
		return -RINGTRACE_ENOMEM;
	}
	if (s->head == s->nq)
		return 0;
	const struct sched_span_item *it = &s->q[s->head++];
	span->name = it->state < 4 ? names[it->state] : "unknown";
	span->cat = "sched";
	span->pid = it->pid;
	span->tid = it->tid;
	span->ns = it->start;
	span->dur_ns = it->end - it->start;
	return 1;
}
