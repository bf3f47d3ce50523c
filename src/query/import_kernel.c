/*
 * The kernel trace's tables (query_internal.h): ftrace_event, sched_slice
 * and thread_state, from the records of a collection's kernel trace
 * (docs/kernel.md) fed in time order.
 *
 * ftrace_event: one row per kernel event. Its utid is the task that was
 * running on the CPU when the kernel recorded it: the record's common_pid
 * field (the recorder keeps it as the last field of every kernel event;
 * the page's own tid is 0, the kernel trace's pages are per CPU, not per
 * thread). The idle task (common_pid 0) is a thread too here, named
 * "swapper" (an interrupt on an idle CPU runs in it); a record without
 * common_pid has utid NULL.
 *
 * sched_slice and thread_state are the scheduling model's
 * (analysis_api.h: the one `ringtrace sched` prints), through its interval
 * callback, so that they agree with `ringtrace sched` by construction:
 *
 *   thread_state  every interval the model ends: 'Running' (cpu: the CPU
 *                 it was switched in on), runnable as 'R' when woken up
 *                 (waker_utid: the task running on the CPU that recorded
 *                 the wake-up, its common_pid) or as the switch-out's
 *                 prev_state ('R', or 'R+' preempted: Perfetto's
 *                 letters), blocked as the switch-out's prev_state ('S',
 *                 'D', 'S|D' ..., as the kernel prints it), and 'U' for
 *                 the model's unknown time (after lost events, or between
 *                 events that contradict each other);
 *   sched_slice   every running interval: ts and cpu of the switch-in,
 *                 priority its next_prio, end_state the prev_state letters
 *                 of the switch-out that ends it (NULL when it is still
 *                 running at the end of the trace, or events were lost).
 *
 * So a thread's sum of thread_state durations per state, and of its
 * sched_slice durations, are exactly the running / runnable / blocked /
 * unknown times of `ringtrace sched --all`. The model leaves out the idle
 * task (tid 0), and counts as unknown (no slice) a running time whose end
 * the trace does not tell: a thread switched in again without its
 * switch-out, for instance; so a CPU's slices can leave gaps. Open
 * intervals end at the last scheduling record, as in `ringtrace sched`.
 *
 * What makes them less than exact, as `ringtrace sched`'s notes say it, is
 * in stats (source 'analysis', when there is a kernel trace): sched_lost_*,
 * sched_inconsistent, sched_no_wakeup, sched_out_of_order,
 * sched_undecodable, sched_beyond_cap.
 *
 * Rows are appended when an interval ends (the model ends them in time
 * order of their ends), so that a table cleared between chunks (`--db
 * FILE`) never holds a row whose duration is still to come.
 */
#include <stdlib.h>
#include <string.h>

#include "query/query_internal.h"
#include "ringtrace/schema.h"

#define QK_MAX_FIELDS 64u /* the metadata parser's limit */
#define QK_EVCACHE 64u

enum { FE_ID, FE_TS, FE_CPU, FE_UTID, FE_NAME, FE_ARGS };
static const struct qy_coldef qk_fe_cols[] = {
	{"id", QY_INT},   {"ts", QY_INT},    {"cpu", QY_INT},
	{"utid", QY_INT}, {"name", QY_TEXT}, {"arg_set_id", QY_INT},
};
enum { SS_ID, SS_TS, SS_DUR, SS_CPU, SS_UTID, SS_END_STATE, SS_PRIORITY };
static const struct qy_coldef qk_ss_cols[] = {
	{"id", QY_INT},   {"ts", QY_INT},         {"dur", QY_INT},      {"cpu", QY_INT},
	{"utid", QY_INT}, {"end_state", QY_TEXT}, {"priority", QY_INT},
};
enum { TS_ID, TS_TS, TS_DUR, TS_UTID, TS_STATE, TS_CPU, TS_WAKER };
static const struct qy_coldef qk_ts_cols[] = {
	{"id", QY_INT},     {"ts", QY_INT},  {"dur", QY_INT},        {"utid", QY_INT},
	{"state", QY_TEXT}, {"cpu", QY_INT}, {"waker_utid", QY_INT},
};

enum qk_kind { QK_OTHER = 0, QK_SWITCH, QK_WAKEUP };

/* A kernel event's name and where its fields are (-1: absent). */
struct qk_evinfo {
	const struct ringtrace_trace_event_def *def;
	uint32_t name; /* string id */
	uint8_t kind;
	int16_t common_pid, prev_pid, prev_state, prev_comm, next_pid, next_comm, next_prio, pid,
		comm;
};

/* What the tables need of a thread of the model beyond the model's own
 * state: set when its current state began (the model's thread's tag is
 * its index). */
struct qk_thread {
	int64_t utid;
	uint32_t state;    /* the thread_state letters of the current state */
	int64_t waker;     /* its waker's utid (runnable after a wake-up), or NULL */
	int64_t cpu, prio; /* of its switch-in (running) */
	uint8_t prio_min;  /* prio's INT64_MIN is the field's value, not NULL */
	uint64_t unknown;  /* the model's unknown time already given rows */
};

struct qy_kernel {
	struct qy_store *s;
	struct qy_threads *th;
	struct qy_table *fe, *ss, *ts;
	struct sm_model *m;
	struct qk_evinfo ev[QK_EVCACHE];
	struct qk_thread *kt;
	uint32_t nkt, ktcap;
	uint32_t letters[0x200]; /* prev_state & 0x1ff: its letters' string id (0: not yet) */
	uint32_t s_running, s_r, s_u;
	uint64_t fed;    /* records of the kernel trace */
	uint64_t no_pid; /* events without a readable common_pid */
	/* the switch being fed: the running interval of prev that it ends
	 * ends with these letters */
	int in_switch;
	int64_t sw_prev;
	uint32_t sw_letters;
	int oom;
};

/* The letters the kernel prints for a prev_state (its sched_switch print
 * fmt): "R" when the low byte is 0, else the flags of its bits joined by
 * '|'; then "+" for the preemption bit 0x100. */
static uint32_t qk_letters(struct qy_kernel *k, int64_t prev_state)
{
	uint32_t v = (uint32_t)((uint64_t)prev_state & 0x1ff);
	if (k->letters[v])
		return k->letters[v];
	static const char flags[] = "SDTtXZPI";
	char buf[24];
	size_t n = 0;
	if (!(v & 0xff))
		buf[n++] = 'R';
	for (int b = 0; b < 8; b++) {
		if (!(v & (1u << b)))
			continue;
		if (n)
			buf[n++] = '|';
		buf[n++] = flags[b];
	}
	if (v & 0x100)
		buf[n++] = '+';
	uint32_t id = qy_str(k->s, buf, n);
	if (id == QY_STR_NOMEM) {
		k->oom = 1;
		return 0;
	}
	return k->letters[v] = id;
}

static int16_t qk_field(const struct ringtrace_trace_event_def *d, const char *name)
{
	for (uint32_t i = 0; i < d->nfields && i < QK_MAX_FIELDS; i++)
		if (d->fields[i].name && strcmp(d->fields[i].name, name) == 0)
			return (int16_t)i;
	return -1;
}

/* The event's info, cached by its id (NULL: out of memory). */
static const struct qk_evinfo *qk_info(struct qy_kernel *k,
				       const struct ringtrace_trace_event_def *d)
{
	struct qk_evinfo *e = &k->ev[d->id % QK_EVCACHE];
	if (e->def == d)
		return e;
	memset(e, 0, sizeof(*e));
	e->name = qy_strz(k->s, d->name ? d->name : "");
	if (e->name == QY_STR_NOMEM)
		return NULL;
	e->def = d;
	const char *nm = d->name ? d->name : "";
	e->common_pid = qk_field(d, "common_pid");
	e->prev_pid = qk_field(d, "prev_pid");
	e->prev_state = qk_field(d, "prev_state");
	e->prev_comm = qk_field(d, "prev_comm");
	e->next_pid = qk_field(d, "next_pid");
	e->next_comm = qk_field(d, "next_comm");
	e->next_prio = qk_field(d, "next_prio");
	e->pid = qk_field(d, "pid");
	e->comm = qk_field(d, "comm");
	if (strcmp(nm, "sched_switch") == 0 && e->prev_pid >= 0 && e->prev_state >= 0 &&
	    e->next_pid >= 0)
		e->kind = QK_SWITCH;
	else if ((strcmp(nm, "sched_wakeup") == 0 || strcmp(nm, "sched_wakeup_new") == 0 ||
		  strcmp(nm, "sched_waking") == 0) &&
		 e->pid >= 0)
		e->kind = QK_WAKEUP;
	return e;
}

/* An integer field's value (0 and *out; -1: absent or not an integer). */
static int qk_int(const struct ringtrace_value *vals, int n, int16_t i, int64_t *out)
{
	if (i < 0 || i >= n)
		return -1;
	const struct ringtrace_field_desc *f = vals[i].field;
	if (!f || (f->type != RINGTRACE_FT_INT && f->type != RINGTRACE_FT_ENUM))
		return -1;
	*out = f->is_signed ? vals[i].v.i : (int64_t)vals[i].v.u;
	return 0;
}

/* A string field into buf (SM_COMM_LEN + 1 bytes); NULL if absent. */
static const char *qk_comm(const struct ringtrace_value *vals, int n, int16_t i, char *buf)
{
	if (i < 0 || i >= n || !vals[i].field || vals[i].field->type != RINGTRACE_FT_STRING ||
	    !vals[i].ptr)
		return NULL;
	size_t l = vals[i].len > SM_COMM_LEN ? SM_COMM_LEN : vals[i].len;
	memcpy(buf, vals[i].ptr, l);
	buf[l] = 0;
	return buf;
}

/* The utid of a kernel tid seen at ns (the idle task is "swapper"). */
static int64_t qk_utid(struct qy_kernel *k, int64_t tid, const char *comm, uint64_t ns)
{
	if (tid == 0)
		comm = "swapper";
	return qy_thread_utid(k->th, tid, comm, ns);
}

/* The model's thread of tid (if it has one) given its index among ours;
 * NULL if the model has none, or out of memory (k->oom). */
static struct qk_thread *qk_thread(struct qy_kernel *k, int64_t tid, uint64_t ns)
{
	struct sm_thread *t = sm_find(k->m, tid);
	if (!t)
		return NULL;
	if (t->tag >= 0 && (uint32_t)t->tag < k->nkt)
		return &k->kt[t->tag];
	if (k->nkt == k->ktcap) {
		uint32_t cap = k->ktcap ? k->ktcap * 2 : 256;
		struct qk_thread *n = realloc(k->kt, (size_t)cap * sizeof(*n));
		if (!n) {
			k->oom = 1;
			return NULL;
		}
		k->kt = n;
		k->ktcap = cap;
	}
	int64_t utid = qk_utid(k, tid, t->comm[0] ? t->comm : NULL, ns);
	if (utid < 0) {
		k->oom = 1;
		return NULL;
	}
	struct qk_thread *q = &k->kt[k->nkt];
	*q = (struct qk_thread){
		.utid = utid, .waker = QY_NULL_INT, .cpu = QY_NULL_INT, .prio = QY_NULL_INT};
	t->tag = (int32_t)k->nkt++;
	return q;
}

static void qk_state_row(struct qy_kernel *k, int64_t utid, uint32_t state, int64_t cpu,
			 int64_t waker, uint64_t start, uint64_t end)
{
	int64_t r = qy_row(k->ts);
	if (r < 0) {
		k->oom = 1;
		return;
	}
	qy_i64(k->ts, TS_ID)[r] = (int64_t)k->ts->base + r;
	qy_i64(k->ts, TS_TS)[r] = (int64_t)start;
	qy_i64(k->ts, TS_DUR)[r] = (int64_t)(end - start);
	qy_i64(k->ts, TS_UTID)[r] = utid;
	qy_sid(k->ts, TS_STATE)[r] = state;
	qy_i64(k->ts, TS_CPU)[r] = cpu;
	qy_i64(k->ts, TS_WAKER)[r] = waker;
}

static void qk_slice_row(struct qy_kernel *k, const struct qk_thread *q, uint32_t end_state,
			 uint64_t start, uint64_t end)
{
	int64_t r = qy_row(k->ss);
	if (r < 0) {
		k->oom = 1;
		return;
	}
	qy_i64(k->ss, SS_ID)[r] = (int64_t)k->ss->base + r;
	qy_i64(k->ss, SS_TS)[r] = (int64_t)start;
	qy_i64(k->ss, SS_DUR)[r] = (int64_t)(end - start);
	qy_i64(k->ss, SS_CPU)[r] = q->cpu;
	qy_i64(k->ss, SS_UTID)[r] = q->utid;
	qy_sid(k->ss, SS_END_STATE)[r] = end_state;
	qy_i64(k->ss, SS_PRIORITY)[r] = q->prio;
	if (q->prio_min && qy_i64_min(k->ss, SS_PRIORITY, (uint64_t)r))
		k->oom = 1;
}

/* The model ended an interval of running, runnable or blocked. */
static void qk_interval(void *arg, const struct sm_thread *t, enum sm_state state, uint64_t start,
			uint64_t end)
{
	struct qy_kernel *k = arg;
	/* (every thread with time counted was given its index at its first
	 * event, before any of its intervals could end) */
	if (t->tag < 0 || (uint32_t)t->tag >= k->nkt)
		return;
	const struct qk_thread *q = &k->kt[t->tag];
	if (state == SM_RUNNING) {
		uint32_t end_state = k->in_switch && t->tid == k->sw_prev ? k->sw_letters : 0;
		qk_state_row(k, q->utid, k->s_running, q->cpu, QY_NULL_INT, start, end);
		qk_slice_row(k, q, end_state, start, end);
	} else {
		qk_state_row(k, q->utid, q->state ? q->state : k->s_r, QY_NULL_INT,
			     state == SM_RUNNABLE ? q->waker : QY_NULL_INT, start, end);
	}
}

/* The model's unknown time of the thread that has no row yet: one row
 * ending where its current state begins (the model ends an unknown time
 * when an event tells the state again, or at a loss, or at the end). */
static void qk_unknown(struct qy_kernel *k, const struct sm_thread *t)
{
	if (t->tag < 0 || (uint32_t)t->tag >= k->nkt)
		return;
	struct qk_thread *q = &k->kt[t->tag];
	uint64_t u = t->ns[SM_UNKNOWN];
	if (u <= q->unknown)
		return;
	uint64_t d = u - q->unknown;
	q->unknown = u;
	uint64_t end = t->since, start = end >= d ? end - d : 0;
	qk_state_row(k, q->utid, k->s_u, QY_NULL_INT, QY_NULL_INT, start, start + d);
}

static void qk_unknown_tid(struct qy_kernel *k, int64_t tid)
{
	const struct sm_thread *t = sm_find(k->m, tid);
	if (t)
		qk_unknown(k, t);
}

static void qk_unknown_all(struct qy_kernel *k)
{
	for (uint32_t i = 0; i < sm_count(k->m); i++)
		qk_unknown(k, sm_at(k->m, i));
}

struct qy_kernel *qy_kernel_new(struct qy_store *s, struct qy_threads *th, char *err,
				size_t errsize)
{
	struct qy_kernel *k = calloc(1, sizeof(*k));
	if (k) {
		k->s = s;
		k->th = th;
		k->m = sm_new(0, 0);
		k->s_running = qy_strz(s, "Running");
		k->s_r = qy_strz(s, "R");
		k->s_u = qy_strz(s, "U");
	}
	if (!k || !k->m || k->s_running == QY_STR_NOMEM || k->s_r == QY_STR_NOMEM ||
	    k->s_u == QY_STR_NOMEM ||
	    !(k->fe = qy_table_add(s, "ftrace_event", qk_fe_cols,
				   sizeof(qk_fe_cols) / sizeof(qk_fe_cols[0]))) ||
	    !(k->ss = qy_table_add(s, "sched_slice", qk_ss_cols,
				   sizeof(qk_ss_cols) / sizeof(qk_ss_cols[0]))) ||
	    !(k->ts = qy_table_add(s, "thread_state", qk_ts_cols,
				   sizeof(qk_ts_cols) / sizeof(qk_ts_cols[0])))) {
		snprintf(err, errsize,
			 "the kernel tables could not be made: out of memory, or a table of "
			 "the same name exists");
		qy_kernel_free(k);
		return NULL;
	}
	sm_set_interval_fn(k->m, qk_interval, k);
	return k;
}

void qy_kernel_free(struct qy_kernel *k)
{
	if (!k)
		return;
	sm_free(k->m);
	free(k->kt);
	free(k);
}

/* A sched_switch (its fields decoded): fed to the model, then what the
 * tables need of both sides as their new states begin. */
static void qk_switch(struct qy_kernel *k, const struct qk_evinfo *e,
		      const struct ringtrace_trace_record *rec, const struct ringtrace_value *vals,
		      int n)
{
	int64_t prev, state, next, prio;
	char c1[SM_COMM_LEN + 1], c2[SM_COMM_LEN + 1];
	if (qk_int(vals, n, e->prev_pid, &prev) < 0 || qk_int(vals, n, e->prev_state, &state) < 0 ||
	    qk_int(vals, n, e->next_pid, &next) < 0) {
		sm_kernel_record(k->m, rec); /* (counted as undecodable there) */
		return;
	}
	int have_prio = qk_int(vals, n, e->next_prio, &prio) == 0;
	if (!have_prio)
		prio = QY_NULL_INT;
	/* (the names and the threads' time spans in `thread`) */
	if ((prev && qk_utid(k, prev, qk_comm(vals, n, e->prev_comm, c1), rec->ns) < 0) ||
	    (next && qk_utid(k, next, qk_comm(vals, n, e->next_comm, c2), rec->ns) < 0)) {
		k->oom = 1;
		return;
	}
	k->in_switch = 1;
	k->sw_prev = prev;
	k->sw_letters = qk_letters(k, state);
	sm_kernel_record(k->m, rec);
	k->in_switch = 0;
	struct qk_thread *q = qk_thread(k, prev, rec->ns);
	const struct sm_thread *t = sm_find(k->m, prev);
	if (q && t && (t->state == SM_RUNNABLE || t->state == SM_BLOCKED)) {
		q->state = k->sw_letters;
		q->waker = QY_NULL_INT;
	}
	if ((q = qk_thread(k, next, rec->ns))) {
		q->cpu = rec->cpu == UINT32_MAX ? QY_NULL_INT : (int64_t)rec->cpu;
		q->prio = prio;
		q->prio_min = have_prio && prio == INT64_MIN;
	}
	qk_unknown_tid(k, prev);
	qk_unknown_tid(k, next);
}

/* A wake-up (its fields decoded) by the task waker (a utid, or NULL). */
static void qk_wakeup(struct qy_kernel *k, const struct qk_evinfo *e,
		      const struct ringtrace_trace_record *rec, const struct ringtrace_value *vals,
		      int n, int64_t waker)
{
	int64_t pid;
	char c1[SM_COMM_LEN + 1];
	if (qk_int(vals, n, e->pid, &pid) < 0) {
		sm_kernel_record(k->m, rec);
		return;
	}
	if (pid && qk_utid(k, pid, qk_comm(vals, n, e->comm, c1), rec->ns) < 0) {
		k->oom = 1;
		return;
	}
	const struct sm_thread *t = sm_find(k->m, pid);
	int was = t ? t->state : SM_UNKNOWN;
	sm_kernel_record(k->m, rec);
	struct qk_thread *q = qk_thread(k, pid, rec->ns);
	t = sm_find(k->m, pid);
	/* (a wake-up of a running or runnable thread changes nothing) */
	if (q && t && t->state == SM_RUNNABLE && was != SM_RUNNING && was != SM_RUNNABLE) {
		q->state = k->s_r;
		q->waker = waker;
	}
	qk_unknown_tid(k, pid);
}

int qy_kernel_record(struct qy_kernel *k, const struct ringtrace_trace_record *rec,
		     int64_t event_id)
{
	k->fed++;
	if (rec->kind != RINGTRACE_TRACE_EVENT || !rec->def) {
		/* a loss: every thread's state unknown from there */
		sm_kernel_record(k->m, rec);
		if (rec->kind == RINGTRACE_TRACE_LOST)
			qk_unknown_all(k);
		return k->oom ? -1 : 0;
	}
	const struct qk_evinfo *e = qk_info(k, rec->def);
	if (!e)
		return -1;
	struct ringtrace_value vals[QK_MAX_FIELDS];
	int n = -1;
	if (rec->def->nfields <= QK_MAX_FIELDS)
		n = ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data,
					    rec->len, vals);
	int64_t pid, utid = QY_NULL_INT;
	if (qk_int(vals, n, e->common_pid, &pid) == 0) {
		if ((utid = qk_utid(k, pid, NULL, rec->ns)) < 0)
			return -1;
	} else {
		k->no_pid++;
	}
	int64_t r = qy_row(k->fe);
	if (r < 0)
		return -1;
	qy_i64(k->fe, FE_ID)[r] = (int64_t)k->fe->base + r;
	qy_i64(k->fe, FE_TS)[r] = (int64_t)rec->ns;
	qy_i64(k->fe, FE_CPU)[r] = rec->cpu == UINT32_MAX ? QY_NULL_INT : (int64_t)rec->cpu;
	qy_i64(k->fe, FE_UTID)[r] = utid;
	qy_sid(k->fe, FE_NAME)[r] = e->name;
	qy_i64(k->fe, FE_ARGS)[r] = event_id >= 0 ? event_id : QY_NULL_INT;

	if (e->kind == QK_SWITCH)
		qk_switch(k, e, rec, vals, n);
	else if (e->kind == QK_WAKEUP)
		qk_wakeup(k, e, rec, vals, n, utid);
	else
		sm_kernel_record(k->m, rec);
	return k->oom ? -1 : 0;
}

/* The model's accounting as stats rows: what makes the scheduling tables
 * less than exact, as `ringtrace sched` notes it. */
static int qk_stats(struct qy_kernel *k)
{
	const struct sm_stats *st = sm_stats(k->m);
	uint64_t incons = 0, nowake = 0;
	for (uint32_t i = 0; i < sm_count(k->m); i++) {
		incons += sm_at(k->m, i)->inconsistent;
		nowake += sm_at(k->m, i)->no_wakeup;
	}
	static const char *const src = "analysis";
	struct {
		const char *name, *severity;
		uint64_t value;
		const char *desc;
	} rows[] = {
		{"sched_switch", "info", st->switches,
		 "sched_switch records fed to the scheduling model"},
		{"sched_wakeup", "info", st->wakeups,
		 "sched_wakeup, sched_wakeup_new and sched_waking records fed to the scheduling "
		 "model"},
		{"sched_undecodable", "error", st->undecodable,
		 "scheduling records whose fields could not be read (left out)"},
		{"sched_out_of_order", "error", st->out_of_order,
		 "kernel records earlier than one before them (counted at the state's start)"},
		{"sched_lost_marks", "data_loss", st->lost_marks,
		 "places the kernel trace marks events lost (every thread's state unknown from "
		 "each until its next event)"},
		{"sched_lost_events", "data_loss", st->lost_events,
		 "kernel events those marks count as lost"},
		{"sched_beyond_cap", "data_loss", st->beyond_cap,
		 "scheduling events of threads beyond the model's thread cap (left out)"},
		{"sched_inconsistent", "data_loss", incons,
		 "scheduling events that contradict the state before them (an event was missed: "
		 "the time in between is state 'U')"},
		{"sched_no_wakeup", "info", nowake,
		 "switch-ins of a blocked thread without a wake-up (the off-CPU time counts as "
		 "blocked)"},
		{"sched_oom", "error", (uint64_t)st->oom,
		 "the scheduling model ran out of memory (latencies or stretches missing)"},
		{"ftrace_event_no_pid", "error", k->no_pid,
		 "kernel events whose common_pid could not be read (utid NULL)"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (qy_stat(k->s, rows[i].name, QY_NULL_INT, rows[i].severity, src,
			    (int64_t)rows[i].value, rows[i].desc) < 0)
			return -1;
	return 0;
}

int qy_kernel_finish(struct qy_kernel *k, uint64_t end_ns)
{
	/* Open intervals end at the last scheduling record, not at end_ns
	 * (the trace's last record, of any trace): as `ringtrace sched` ends
	 * them, so that the tables and it agree to the nanosecond. */
	(void)end_ns;
	sm_finish(k->m, sm_stats(k->m)->last_ns);
	qk_unknown_all(k);
	/* (no kernel trace: no accounting of one) */
	if (k->oom || (k->fed && qk_stats(k) < 0))
		return -1;
	return 0;
}
