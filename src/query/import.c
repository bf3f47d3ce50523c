/*
 * The import (query_api.h): one pass over the collection's records merged
 * by time, filling the store's tables.
 *
 * What becomes what:
 *  - every record of an event: a row of its event's table (id, ts, utid,
 *    cpu, its fields as typed columns), which `args` (args.c) shows as a
 *    row per field (the hidden `_truncated` byte of records with strings
 *    is left out, as the report and the JSON export leave it out): the
 *    event's table and row given to args, and an enum's number and name
 *    too (the table holds only the name). Integers are stored as
 *    integers (an unsigned 64-bit value above INT64_MAX as its two's
 *    complement), enums as their value's name in the event's table and as
 *    name and number in `args`, arrays as "{a,b,c}" and byte sequences as
 *    hex digits (as `ringtrace report` prints them);
 *  - instant events: a slice of dur 0; begin events a slice, ended by the
 *    thread's next end event whatever its name (a stack per thread, as
 *    Perfetto pairs "B" and "E"), named after the begin event; a begin
 *    never ended keeps dur -1. Slices nest at most QY_MAX_DEPTH deep per
 *    thread: a begin beyond is no slice (its event row and args stay),
 *    counted, and its end closes it;
 *  - ringtrace_printf records: a row of the table ringtrace_printf (text:
 *    the formatted text, args' row of key 'text') and an instant slice
 *    named "ringtrace_printf";
 *  - counter events: a row of `counter` per numeric field (int, uint,
 *    bool, enum, real), on the track of its (event table, field);
 *  - the kernel trace's records (sched_kernel_trace): event rows (and so
 *    args) like any other, utid from their common_pid field, no slices or
 *    counters; then each is given to import_kernel.c (qy_kernel_record),
 *    its losses too;
 *  - lost-event records: a row of `loss` each.
 *
 * Names are untrusted. An event's table is named after the event when the
 * name is a plain identifier (qy_plain_name) that no table has yet,
 * compared as SQLite compares names (ASCII case folded); else event_<N>,
 * N the event table's number (from 1). The traces of a collection share a
 * table when an event has the same name and the same fields (names and
 * types). A field's column is named after it likewise, else field_<i>
 * (its place among the event's fields, from 1; id, ts, utid and cpu are
 * taken). `event_table` and `event_column` list every name given.
 *
 * The `stats` rows (docs/query.md lists them):
 *
 *   name                     idx   severity   source    value
 *   events                   upid  info       trace     events imported from the trace
 *   events_dropped           upid  data_loss  trace     dropped by its writers (as `ringtrace stat`)
 *   events_overrun           upid  data_loss  trace     lost to recycled pages (as `ringtrace stat`)
 *   trace_errors             upid  error      trace     damage the reader found (each said on its
 *                                                       error callback: coll_open's)
 *   events_undecodable       upid  error      trace     events whose fields could not be read
 *                                                       (imported without them; said on on_error)
 *   filter_rejected          upid  info       trace     calls the events' filters kept out (metadata)
 *   traces_failed            NULL  error      trace     traces of the collection not opened
 *   slice_unclosed           NULL  info       analysis  begins never ended (dur -1)
 *   slice_end_without_begin  NULL  data_loss  analysis  ends with no begin open on their thread
 *   slice_depth_exceeded     NULL  error      analysis  begins deeper than QY_MAX_DEPTH (no slice)
 *
 * Chunks (qy_import_opts): what a later record can change is kept here
 * and written at the end: the threads (their rows), event_table (its
 * counts) and stats; the rows of the other tables never change once
 * written, except a slice's dur, given to late_dur when its row was
 * copied out already.
 *
 * Speed: per record, an array lookup gives the event's table and fields
 * (made once per event of each trace), a per-stream cache its thread,
 * and the rows are array stores; only string values are interned.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "query/query_internal.h"
#include "schema/schema_api.h"

#define QY_MAX_DEPTH 256u
#define QY_MAX_FIELDS 64u /* the metadata's limit (RT_CTF_MAX_FIELDS) */

/* ---- the built-in tables ---- */

enum { PR_UPID, PR_PID, PR_NAME, PR_EXE, PR_HOST, PR_UUID, PR_TRACE, PR_RTO, PR_N };
static const struct qy_coldef qy_process_cols[PR_N] = {
	{"upid", QY_INT},      {"pid", QY_INT},   {"name", QY_TEXT},  {"executable", QY_TEXT},
	{"hostname", QY_TEXT}, {"uuid", QY_TEXT}, {"trace", QY_TEXT}, {"realtime_offset", QY_INT},
};
enum { TH_UTID, TH_TID, TH_NAME, TH_UPID, TH_START, TH_END, TH_N };
static const struct qy_coldef qy_thread_cols[TH_N] = {
	{"utid", QY_INT}, {"tid", QY_INT},      {"name", QY_TEXT},
	{"upid", QY_INT}, {"start_ts", QY_INT}, {"end_ts", QY_INT},
};
enum { SL_ID, SL_TS, SL_DUR, SL_UTID, SL_NAME, SL_DEPTH, SL_PARENT, SL_ARGS, SL_CPU, SL_N };
static const struct qy_coldef qy_slice_cols[SL_N] = {
	{"id", QY_INT},        {"ts", QY_INT},         {"dur", QY_INT},
	{"utid", QY_INT},      {"name", QY_TEXT},      {"depth", QY_INT},
	{"parent_id", QY_INT}, {"arg_set_id", QY_INT}, {"cpu", QY_INT},
};
enum { CT_ID, CT_NAME, CT_EVENT, CT_FIELD, CT_N };
static const struct qy_coldef qy_ctrack_cols[CT_N] = {
	{"id", QY_INT}, {"name", QY_TEXT}, {"event", QY_TEXT}, {"field", QY_TEXT}};
enum { CN_ID, CN_TS, CN_TRACK, CN_VALUE, CN_UTID, CN_N };
static const struct qy_coldef qy_counter_cols[CN_N] = {
	{"id", QY_INT}, {"ts", QY_INT}, {"track_id", QY_INT}, {"value", QY_REAL}, {"utid", QY_INT}};
enum { ET_EVENT, ET_TABLE, ET_KIND, ET_FIELDS, ET_COUNT, ET_N };
static const struct qy_coldef qy_etable_cols[ET_N] = {
	{"event", QY_TEXT}, {"table_name", QY_TEXT}, {"kind", QY_TEXT},
	{"fields", QY_INT}, {"count", QY_INT},
};
enum { EC_TABLE, EC_FIELD, EC_COLUMN, EC_TYPE, EC_N };
static const struct qy_coldef qy_ecolumn_cols[EC_N] = {
	{"table_name", QY_TEXT}, {"field", QY_TEXT}, {"column_name", QY_TEXT}, {"type", QY_TEXT}};
enum { LO_TS, LO_UPID, LO_UTID, LO_STREAM, LO_DROPPED, LO_OVERRUN, LO_N };
static const struct qy_coldef qy_loss_cols[LO_N] = {
	{"ts", QY_INT},     {"upid", QY_INT},    {"utid", QY_INT},
	{"stream", QY_INT}, {"dropped", QY_INT}, {"overrun", QY_INT},
};
enum { ST_NAME, ST_IDX, ST_SEV, ST_SOURCE, ST_VALUE, ST_DESC, ST_N };
static const struct qy_coldef qy_stats_cols[ST_N] = {
	{"name", QY_TEXT},   {"idx", QY_INT},   {"severity", QY_TEXT},
	{"source", QY_TEXT}, {"value", QY_INT}, {"description", QY_TEXT},
};

/* Names no event table takes, whether or not the table exists yet (the
 * kernel part makes ftrace_event, sched_slice and thread_state; `ringtrace
 * query --db` writes ringtrace_meta beside the tables in its file). */
static const char *const qy_reserved[] = {
	"process",       "thread",           "slice",
	"counter_track", "counter",          "args",
	"event_table",   "event_column",     "loss",
	"stats",         "ringtrace_printf", "ftrace_event",
	"sched_slice",   "thread_state",     "ringtrace_meta",
};

/* The event columns every event table starts with. */
enum { EV_ID, EV_TS, EV_UTID, EV_CPU, EV_FIRST };

/* value_type names of args (and of event_column's type) */
enum {
	VT_INT,
	VT_UINT,
	VT_REAL,
	VT_STRING,
	VT_POINTER,
	VT_BOOL,
	VT_ENUM,
	VT_ARRAY,
	VT_BYTES,
	VT_N
};
static const char *const qy_vt_names[VT_N] = {"int",  "uint", "real",  "string", "pointer",
					      "bool", "enum", "array", "bytes"};

/* ---- threads ---- */

struct qy_open {
	int64_t id; /* the slice */
	uint64_t ts;
};

struct qy_thr {
	int64_t tid;
	int64_t upid;        /* QY_NULL_INT: no user trace has it */
	uint32_t name;       /* string id (0: none) */
	uint64_t start, end; /* first and last event (start > end: none) */
	struct qy_open *stk; /* the open slices, innermost last */
	uint32_t depth, cap;
	uint64_t over; /* begins open beyond QY_MAX_DEPTH */
};

struct qy_threads {
	struct qy_store *s;
	struct qy_thr *v;
	uint32_t n, cap;
	uint32_t *slots; /* utid + 1; 0 empty */
	uint32_t nslots; /* a power of two */
};

static uint32_t qy_tid_hash(int64_t tid)
{
	return (uint32_t)(((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 32);
}

static int qy_threads_rehash(struct qy_threads *th)
{
	uint32_t n = th->nslots ? th->nslots * 2 : 1024;
	if (n < th->nslots)
		return -1;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t u = 0; u < th->n; u++) {
		uint32_t i = qy_tid_hash(th->v[u].tid) & (n - 1);
		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = u + 1;
	}
	free(th->slots);
	th->slots = slots;
	th->nslots = n;
	return 0;
}

/* A thread's name set to comm unless it is that already. 0, or -1. */
static int qy_thread_name(struct qy_threads *th, struct qy_thr *t, const char *comm, size_t len)
{
	size_t have;
	const char *cur = qy_str_get(th->s, t->name, &have);
	if (cur && have == len && memcmp(cur, comm, len) == 0)
		return 0;
	uint32_t id = qy_str(th->s, comm, len);
	if (id == QY_STR_NOMEM)
		return -1;
	t->name = id;
	return 0;
}

/*
 * The utid of tid, made at first sight; its name set to comm (if not
 * NULL), its upid to upid (if not NULL and it has none), its time widened
 * to ns if widen. -1: out of memory.
 */
static int64_t qy_thread_get(struct qy_threads *th, int64_t tid, const char *comm, int64_t upid,
			     uint64_t ns, int widen)
{
	if ((uint64_t)th->n * 2 >= th->nslots && qy_threads_rehash(th))
		return -1;
	uint32_t mask = th->nslots - 1, i = qy_tid_hash(tid) & mask;
	struct qy_thr *t = NULL;
	for (; th->slots[i]; i = (i + 1) & mask) {
		if (th->v[th->slots[i] - 1].tid == tid) {
			t = &th->v[th->slots[i] - 1];
			break;
		}
	}
	if (!t) {
		if (th->n == UINT32_MAX - 1)
			return -1;
		if (th->n == th->cap) {
			uint32_t cap = th->cap ? th->cap * 2 : 256;
			struct qy_thr *v = realloc(th->v, (size_t)cap * sizeof(*v));
			if (!v)
				return -1;
			th->v = v;
			th->cap = cap;
		}
		t = &th->v[th->n];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->upid = QY_NULL_INT;
		t->start = UINT64_MAX;
		th->slots[i] = ++th->n;
	}
	if (widen) {
		if (ns < t->start)
			t->start = ns;
		if (ns > t->end)
			t->end = ns;
	}
	if (upid != QY_NULL_INT && t->upid == QY_NULL_INT)
		t->upid = upid;
	if (comm && qy_thread_name(th, t, comm, strlen(comm)))
		return -1;
	return (int64_t)(t - th->v);
}

int64_t qy_thread_utid(struct qy_threads *th, int64_t tid, const char *comm, uint64_t ns)
{
	return qy_thread_get(th, tid, comm, QY_NULL_INT, ns, 1);
}

static void qy_threads_free(struct qy_threads *th)
{
	for (uint32_t u = 0; u < th->n; u++)
		free(th->v[u].stk);
	free(th->v);
	free(th->slots);
}

/* ---- stats ---- */

int qy_stat(struct qy_store *s, const char *name, int64_t idx, const char *severity,
	    const char *source, int64_t value, const char *description)
{
	struct qy_table *t = qy_table_find(s, "stats");
	if (!t)
		return -1;
	uint32_t n = qy_strz(s, name), sev = qy_strz(s, severity), src = qy_strz(s, source),
		 d = qy_strz(s, description);
	if (n == QY_STR_NOMEM || sev == QY_STR_NOMEM || src == QY_STR_NOMEM || d == QY_STR_NOMEM)
		return -1;
	int64_t r = qy_row(t);
	if (r < 0)
		return -1;
	qy_sid(t, ST_NAME)[r] = n;
	qy_i64(t, ST_IDX)[r] = idx;
	qy_sid(t, ST_SEV)[r] = sev;
	qy_sid(t, ST_SOURCE)[r] = src;
	qy_i64(t, ST_VALUE)[r] = value;
	qy_sid(t, ST_DESC)[r] = d;
	return 0;
}

/* ---- events and their tables ---- */

/* An event table: one event name and field layout. */
struct qy_etab {
	struct qy_table *t;
	const struct ringtrace_trace_event_def *def; /* the first definition (its layout) */
	uint32_t name;                               /* string id of the event's name */
	uint32_t kind;                               /* enum ringtrace_event_kind */
	uint32_t nf;                                 /* fields (columns after EV_FIRST) */
	uint64_t count;                              /* rows, chunks included */
	int64_t *track; /* counter events: per field, its track or -1 */
	int64_t asrc;   /* its number as a source of args */
	uint32_t same;  /* the next table of the same name + 1 */
};

/* A field of an event of a trace, as imported. */
struct qy_fld {
	const struct ringtrace_field_desc *fd;
	uint32_t fi;     /* its index among the definition's fields */
	uint32_t *enums; /* enum: the string id of each value's name */
};

/* An event of a trace (by id). */
struct qy_ev {
	const struct ringtrace_trace_event_def *def;
	struct qy_etab *et;
	uint32_t nf;
	struct qy_fld *f;
	int32_t pid_fi; /* kernel events: the index of common_pid, -1 none */
};

/* A thread seen last on a stream (the reader gives a stream's tid and comm). */
struct qy_scache {
	uint32_t tid;
	int valid;
	int64_t utid;
	char comm[17];
};

struct qy_tr {
	ringtrace_trace *t;
	struct qy_ev **ev; /* by event id: NULL none */
	uint32_t nid;
	struct qy_ev *evs; /* the events of the trace */
	uint32_t nevs;
	struct qy_scache *sc; /* by stream index */
	uint32_t nsc;
	int kernel;
	uint64_t events, undecodable;
};

struct qy_imp {
	struct qy_store *s;
	const struct coll *c;
	const struct qy_import_opts *o;
	struct qy_threads th;
	struct qy_kernel *k;
	struct qy_tr *tr;
	struct qy_etab **et;
	uint32_t net, etcap;
	uint32_t *etmap; /* by name's string id (hashed): etab index + 1 */
	uint32_t etslots;
	struct qy_etab *printf_et;
	struct qy_table *process, *thread, *slice, *ctrack, *counter, *etable, *ecolumn, *loss,
		*stats;
	struct qy_args *args;
	uint32_t vt[VT_N];
	uint32_t s_text, s_printf;
	int64_t next_event;
	uint64_t end_without_begin, depth_exceeded;
	uint64_t last_ns;
	int cons_err; /* the error a consumer's callback returned */
	char *buf;    /* text of printf records, arrays and bytes */
	size_t bufsize;
	struct ringtrace_value vals[QY_MAX_FIELDS];
	char *err;
	size_t errsize;
};

static int qy_fail(struct qy_imp *im, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int qy_fail(struct qy_imp *im, int code, const char *fmt, ...)
{
	if (im->err && im->errsize) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(im->err, im->errsize, fmt, ap);
		va_end(ap);
	}
	return -code;
}

static int qy_oom(struct qy_imp *im)
{
	return qy_fail(im, RINGTRACE_ENOMEM, "out of memory");
}

static int qy_buf(struct qy_imp *im, size_t need)
{
	if (need <= im->bufsize)
		return 0;
	size_t n = im->bufsize ? im->bufsize : 4096;
	while (n < need)
		n *= 2;
	char *b = realloc(im->buf, n);
	if (!b)
		return -1;
	im->buf = b;
	im->bufsize = n;
	return 0;
}

/* Whether a table (of any name SQLite would take as the same) exists. */
static int qy_name_taken(struct qy_store *s, const char *name)
{
	for (size_t i = 0; i < sizeof(qy_reserved) / sizeof(qy_reserved[0]); i++)
		if (strcasecmp(qy_reserved[i], name) == 0)
			return 1;
	for (uint32_t i = 0; i < qy_table_count(s); i++)
		if (strcasecmp(qy_table_at(s, i)->name, name) == 0)
			return 1;
	return 0;
}

static int qy_hidden(const struct ringtrace_trace_event_def *d, uint32_t i)
{
	return rt_field_hidden(d->fields, i);
}

static uint32_t qy_visible(const struct ringtrace_trace_event_def *d)
{
	return d->nfields - (d->nfields && qy_hidden(d, 0));
}

static uint8_t qy_coltype(const struct ringtrace_field_desc *f)
{
	switch (f->type) {
	case RINGTRACE_FT_INT:
	case RINGTRACE_FT_BOOL:
	case RINGTRACE_FT_POINTER:
		return QY_INT;
	case RINGTRACE_FT_FLOAT:
		return QY_REAL;
	default:
		return QY_TEXT;
	}
}

static unsigned qy_vtype(const struct ringtrace_field_desc *f)
{
	switch (f->type) {
	case RINGTRACE_FT_INT:
		return f->is_signed ? VT_INT : VT_UINT;
	case RINGTRACE_FT_FLOAT:
		return VT_REAL;
	case RINGTRACE_FT_BOOL:
		return VT_BOOL;
	case RINGTRACE_FT_ENUM:
		return VT_ENUM;
	case RINGTRACE_FT_POINTER:
		return VT_POINTER;
	case RINGTRACE_FT_STRING:
		return VT_STRING;
	case RINGTRACE_FT_BYTES:
		return VT_BYTES;
	default:
		return VT_ARRAY;
	}
}

static int qy_numeric(const struct ringtrace_field_desc *f)
{
	return f->type == RINGTRACE_FT_INT || f->type == RINGTRACE_FT_FLOAT ||
	       f->type == RINGTRACE_FT_BOOL || f->type == RINGTRACE_FT_ENUM;
}

/* Whether two definitions have the same fields (names and types). */
static int qy_same_layout(const struct ringtrace_trace_event_def *a,
			  const struct ringtrace_trace_event_def *b)
{
	uint32_t na = qy_visible(a), nb = qy_visible(b);
	if (na != nb)
		return 0;
	const struct ringtrace_field_desc *fa = a->fields + (a->nfields - na),
					  *fb = b->fields + (b->nfields - nb);
	for (uint32_t i = 0; i < na; i++)
		if (strcmp(fa[i].name, fb[i].name) != 0 || fa[i].type != fb[i].type ||
		    fa[i].size != fb[i].size || fa[i].is_signed != fb[i].is_signed)
			return 0;
	return 1;
}

static const char *qy_kind_name(uint32_t kind)
{
	switch (kind) {
	case RINGTRACE_KIND_BEGIN:
		return "begin";
	case RINGTRACE_KIND_END:
		return "end";
	case RINGTRACE_KIND_COUNTER:
		return "counter";
	default:
		return "instant";
	}
}

/* A row of event_column. */
static int qy_ecolumn_row(struct qy_imp *im, uint32_t table, const char *field, const char *col,
			  uint32_t vtype)
{
	uint32_t f = qy_strz(im->s, field), c = qy_strz(im->s, col);
	int64_t r = f == QY_STR_NOMEM || c == QY_STR_NOMEM ? -1 : qy_row(im->ecolumn);
	if (r < 0)
		return -1;
	qy_sid(im->ecolumn, EC_TABLE)[r] = table;
	qy_sid(im->ecolumn, EC_FIELD)[r] = f;
	qy_sid(im->ecolumn, EC_COLUMN)[r] = c;
	qy_sid(im->ecolumn, EC_TYPE)[r] = im->vt[vtype];
	return 0;
}

/* A counter track for field fd of a counter event's table: its id, or -1. */
static int64_t qy_track(struct qy_imp *im, const char *event, const char *field)
{
	size_t ln = strlen(event) + strlen(field) + 2;
	if (qy_buf(im, ln))
		return -1;
	snprintf(im->buf, im->bufsize, "%s.%s", event, field);
	uint32_t n = qy_str(im->s, im->buf, ln - 1), e = qy_strz(im->s, event),
		 f = qy_strz(im->s, field);
	int64_t r = n == QY_STR_NOMEM || e == QY_STR_NOMEM || f == QY_STR_NOMEM
			    ? -1
			    : qy_row(im->ctrack);
	if (r < 0)
		return -1;
	int64_t id = (int64_t)im->ctrack->base + r;
	qy_i64(im->ctrack, CT_ID)[r] = id;
	qy_sid(im->ctrack, CT_NAME)[r] = n;
	qy_sid(im->ctrack, CT_EVENT)[r] = e;
	qy_sid(im->ctrack, CT_FIELD)[r] = f;
	return id;
}

/* Column names of an event table: its fields' names where they may be. */
static int qy_column_names(const struct ringtrace_field_desc *fd, uint32_t nf, char (*names)[80])
{
	static const char *const fixed[EV_FIRST] = {"id", "ts", "utid", "cpu"};
	for (uint32_t i = 0; i < nf; i++) {
		int ok = qy_plain_name(fd[i].name);
		for (uint32_t k = 0; ok && k < EV_FIRST; k++)
			ok = strcasecmp(fixed[k], fd[i].name) != 0;
		if (ok)
			snprintf(names[i], 80, "%s", fd[i].name);
		else
			snprintf(names[i], 80, "field_%u", i + 1);
		/* unique among the columns before it (a field named field_2...) */
		for (;;) {
			int clash = 0;
			for (uint32_t k = 0; k < EV_FIRST && !clash; k++)
				clash = strcasecmp(fixed[k], names[i]) == 0;
			for (uint32_t k = 0; k < i && !clash; k++)
				clash = strcasecmp(names[k], names[i]) == 0;
			if (!clash)
				break;
			size_t l = strlen(names[i]);
			if (l + 2 > 80)
				return -1;
			names[i][l] = '_';
			names[i][l + 1] = 0;
		}
	}
	return 0;
}

/* The table's name: the event's, or event_<N>. */
static void qy_table_name(struct qy_imp *im, const char *event, char *name, size_t size)
{
	if (qy_plain_name(event) && !qy_name_taken(im->s, event)) {
		snprintf(name, size, "%s", event);
		return;
	}
	for (uint32_t n = im->net + 1;; n++) {
		snprintf(name, size, "event_%u", n);
		if (!qy_name_taken(im->s, name))
			return;
	}
}

uint32_t qy_event_name(const struct qy_table *t)
{
	/* only the event tables get the importer's user pointer (args, which
	 * has one too, is a computed table: it has ops) */
	const struct qy_etab *et = t && !t->ops ? t->user : NULL;
	return et ? et->name : 0;
}

/* The table as a source of args (fd NULL: the printf records' text):
 * its number, or -1 out of memory. */
static int64_t qy_etab_args(struct qy_imp *im, struct qy_table *t,
			    const struct ringtrace_field_desc *fd, uint32_t nf)
{
	uint32_t key[QY_MAX_FIELDS], vtype[QY_MAX_FIELDS];
	uint8_t is_enum[QY_MAX_FIELDS];
	for (uint32_t i = 0; i < nf && i < QY_MAX_FIELDS; i++) {
		key[i] = fd ? qy_strz(im->s, fd[i].name) : im->s_text;
		vtype[i] = im->vt[fd ? qy_vtype(&fd[i]) : VT_STRING];
		is_enum[i] = fd && fd[i].type == RINGTRACE_FT_ENUM;
		if (key[i] == QY_STR_NOMEM)
			return -1;
	}
	return qy_args_source(im->args, t, nf, key, vtype, is_enum);
}

/* A new event table for def (printf: the printf records' table). NULL: out of memory. */
static struct qy_etab *qy_etab_new(struct qy_imp *im, const struct ringtrace_trace_event_def *def,
				   int printf, int counters)
{
	uint32_t nf = printf ? 1 : qy_visible(def);
	const struct ringtrace_field_desc *fd = printf ? NULL : def->fields + (def->nfields - nf);
	const char *event = printf ? "ringtrace_printf" : def->name;
	struct qy_coldef cols[EV_FIRST + QY_MAX_FIELDS] = {
		{"id", QY_INT}, {"ts", QY_INT}, {"utid", QY_INT}, {"cpu", QY_INT}};
	char(*names)[80] = calloc(nf ? nf : 1, sizeof(*names));
	struct qy_etab *et = calloc(1, sizeof(*et));
	char tname[80];
	if (!names || !et || nf > QY_MAX_FIELDS)
		goto fail;
	if (printf) {
		snprintf(tname, sizeof(tname), "ringtrace_printf");
		snprintf(names[0], 80, "text");
		cols[EV_FIRST].type = QY_TEXT;
	} else {
		qy_table_name(im, event, tname, sizeof(tname));
		if (qy_column_names(fd, nf, names))
			goto fail;
		for (uint32_t i = 0; i < nf; i++)
			cols[EV_FIRST + i].type = qy_coltype(&fd[i]);
	}
	for (uint32_t i = 0; i < nf; i++)
		cols[EV_FIRST + i].name = names[i];
	if (!(et->t = qy_table_add(im->s, tname, cols, EV_FIRST + nf)))
		goto fail;
	et->t->user = et;
	et->def = def;
	et->kind = def ? def->kind : RINGTRACE_KIND_INSTANT;
	et->nf = nf;
	et->name = qy_strz(im->s, event);
	uint32_t tn = qy_strz(im->s, tname);
	if (et->name == QY_STR_NOMEM || tn == QY_STR_NOMEM)
		goto fail;
	for (uint32_t i = 0; i < nf; i++)
		if (qy_ecolumn_row(im, tn, printf ? "text" : fd[i].name, names[i],
				   printf ? VT_STRING : qy_vtype(&fd[i])))
			goto fail;
	if ((et->asrc = qy_etab_args(im, et->t, fd, nf)) < 0)
		goto fail;
	if (counters && et->kind == RINGTRACE_KIND_COUNTER && nf) {
		if (!(et->track = malloc(nf * sizeof(*et->track))))
			goto fail;
		for (uint32_t i = 0; i < nf; i++)
			if ((et->track[i] = qy_numeric(&fd[i]) ? qy_track(im, event, fd[i].name)
							       : -2) == -1)
				goto fail;
	}
	free(names);
	return et;
fail:
	free(names);
	if (et)
		free(et->track);
	free(et);
	return NULL;
}

static int qy_etab_keep(struct qy_imp *im, struct qy_etab *et)
{
	if (im->net == im->etcap) {
		uint32_t cap = im->etcap ? im->etcap * 2 : 64;
		struct qy_etab **n = realloc(im->et, cap * sizeof(*n));
		if (!n)
			return -1;
		im->et = n;
		im->etcap = cap;
	}
	/* the name map at most half full */
	if ((im->net + 1) * 2 > im->etslots) {
		uint32_t ns = im->etslots ? im->etslots * 2 : 256;
		uint32_t *m = calloc(ns, sizeof(*m));
		if (!m)
			return -1;
		for (uint32_t i = 0; i < im->etslots; i++) {
			if (!im->etmap[i])
				continue;
			uint32_t j = qy_tid_hash(im->et[im->etmap[i] - 1]->name) & (ns - 1);
			while (m[j])
				j = (j + 1) & (ns - 1);
			m[j] = im->etmap[i];
		}
		free(im->etmap);
		im->etmap = m;
		im->etslots = ns;
	}
	im->et[im->net++] = et;
	/* first of its name: into the map; else chained after the first */
	uint32_t j = qy_tid_hash(et->name) & (im->etslots - 1);
	for (; im->etmap[j]; j = (j + 1) & (im->etslots - 1)) {
		struct qy_etab *first = im->et[im->etmap[j] - 1];
		if (first->name == et->name) {
			et->same = first->same;
			first->same = im->net;
			return 0;
		}
	}
	im->etmap[j] = im->net;
	return 0;
}

/* The table of def: one of the same name and layout, or a new one. */
static struct qy_etab *qy_etab_for(struct qy_imp *im, const struct ringtrace_trace_event_def *def,
				   int counters)
{
	uint32_t name = qy_strz(im->s, def->name);
	if (name == QY_STR_NOMEM)
		return NULL;
	if (im->etslots) {
		uint32_t j = qy_tid_hash(name) & (im->etslots - 1);
		for (; im->etmap[j]; j = (j + 1) & (im->etslots - 1)) {
			struct qy_etab *et = im->et[im->etmap[j] - 1];
			if (et->name != name)
				continue;
			for (; et; et = et->same ? im->et[et->same - 1] : NULL)
				if (et->kind == def->kind && qy_same_layout(et->def, def) &&
				    (!counters || et->kind != RINGTRACE_KIND_COUNTER || et->track))
					return et;
			break;
		}
	}
	struct qy_etab *et = qy_etab_new(im, def, 0, counters);
	if (et && qy_etab_keep(im, et)) {
		free(et->track);
		free(et);
		return NULL;
	}
	return et;
}

/* The events of trace ti: their tables, fields and names. 0, or -1. */
static int qy_trace_events(struct qy_imp *im, uint32_t ti)
{
	struct qy_tr *tr = &im->tr[ti];
	uint32_t ne = ringtrace_trace_event_count(tr->t), maxid = 0;
	for (uint32_t i = 0; i < ne; i++)
		if (ringtrace_trace_event(tr->t, i)->id > maxid)
			maxid = ringtrace_trace_event(tr->t, i)->id;
	tr->nid = ne ? maxid + 1 : 0;
	tr->ev = calloc(tr->nid ? tr->nid : 1, sizeof(*tr->ev));
	tr->evs = calloc(ne ? ne : 1, sizeof(*tr->evs));
	if (!tr->ev || !tr->evs)
		return -1;
	for (uint32_t i = 0; i < ne; i++) {
		const struct ringtrace_trace_event_def *d = ringtrace_trace_event(tr->t, i);
		if (d->id == RINGTRACE_EVENT_ID_PRINTF || d->nfields > QY_MAX_FIELDS)
			continue; /* printf records: their own path; more fields: no such metadata */
		struct qy_ev *ev = &tr->evs[tr->nevs++];
		ev->def = d;
		ev->pid_fi = -1;
		if (!(ev->et = qy_etab_for(im, d, !tr->kernel)))
			return -1;
		ev->nf = qy_visible(d);
		ev->f = calloc(ev->nf ? ev->nf : 1, sizeof(*ev->f));
		if (!ev->f)
			return -1;
		for (uint32_t k = 0; k < ev->nf; k++) {
			struct qy_fld *f = &ev->f[k];
			f->fi = d->nfields - ev->nf + k;
			f->fd = &d->fields[f->fi];
			if (tr->kernel && f->fd->type == RINGTRACE_FT_INT &&
			    strcmp(f->fd->name, "common_pid") == 0)
				ev->pid_fi = (int32_t)f->fi;
			const struct ringtrace_enum_desc *en = f->fd->enm;
			if (f->fd->type != RINGTRACE_FT_ENUM || !en || !en->count)
				continue;
			if (!(f->enums = malloc(en->count * sizeof(*f->enums))))
				return -1;
			for (uint32_t e = 0; e < en->count; e++)
				if ((f->enums[e] = qy_strz(im->s, en->values[e].name)) ==
				    QY_STR_NOMEM)
					return -1;
		}
		tr->ev[d->id] = ev;
	}
	return 0;
}

/* ---- the tables made first ---- */

static int qy_process_row(struct qy_imp *im, uint32_t ti)
{
	struct qy_table *t = im->process;
	int64_t r = qy_row(t);
	if (r < 0)
		return -1;
	ringtrace_trace *tt = im->c->t[ti];
	struct ringtrace_trace_process pr;
	qy_i64(t, PR_UPID)[r] = ti;
	if (ringtrace_trace_process(tt, &pr) == 1) {
		qy_i64(t, PR_PID)[r] = pr.pid;
		const char *v[3] = {pr.procname, pr.executable, pr.hostname};
		for (int i = 0; i < 3; i++) {
			uint32_t id = v[i] && v[i][0] ? qy_strz(im->s, v[i]) : 0;
			if (id == QY_STR_NOMEM)
				return -1;
			qy_sid(t, PR_NAME + i)[r] = id;
		}
	}
	uint8_t u[16];
	if (ringtrace_trace_uuid(tt, u) == 1) {
		char hex[33];
		for (int i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", u[i]);
		if ((qy_sid(t, PR_UUID)[r] = qy_str(im->s, hex, 32)) == QY_STR_NOMEM)
			return -1;
	}
	const char *name = im->c->names ? im->c->names[ti] : NULL;
	if ((qy_sid(t, PR_TRACE)[r] = qy_strz(im->s, name)) == QY_STR_NOMEM)
		return -1;
	int64_t off;
	if (ringtrace_trace_realtime_offset(tt, &off) == 1)
		qy_i64(t, PR_RTO)[r] = off;
	return 0;
}

static int qy_tables(struct qy_imp *im)
{
	struct qy_store *s = im->s;
	struct {
		struct qy_table **t;
		const char *name;
		const struct qy_coldef *cols;
		uint32_t n;
	} const defs[] = {
		{&im->process, "process", qy_process_cols, PR_N},
		{&im->thread, "thread", qy_thread_cols, TH_N},
		{&im->slice, "slice", qy_slice_cols, SL_N},
		{&im->ctrack, "counter_track", qy_ctrack_cols, CT_N},
		{&im->counter, "counter", qy_counter_cols, CN_N},
		{NULL, "args", NULL, 0},
		{&im->etable, "event_table", qy_etable_cols, ET_N},
		{&im->ecolumn, "event_column", qy_ecolumn_cols, EC_N},
		{&im->loss, "loss", qy_loss_cols, LO_N},
		{&im->stats, "stats", qy_stats_cols, ST_N},
	};
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (!defs[i].t ? !(im->args = qy_args_new(s))
			       : !(*defs[i].t = qy_table_add(s, defs[i].name, defs[i].cols,
							     defs[i].n)))
			return qy_table_find(s, defs[i].name)
				       ? qy_fail(im, RINGTRACE_EINVAL,
						 "the store has a table %s already", defs[i].name)
				       : qy_oom(im);
	for (unsigned v = 0; v < VT_N; v++)
		if ((im->vt[v] = qy_strz(s, qy_vt_names[v])) == QY_STR_NOMEM)
			return qy_oom(im);
	im->s_text = qy_strz(s, "text");
	im->s_printf = qy_strz(s, "ringtrace_printf");
	if (im->s_text == QY_STR_NOMEM || im->s_printf == QY_STR_NOMEM)
		return qy_oom(im);
	return 0;
}

/* The tables, the kernel part, the traces' processes and events. */
static int qy_setup(struct qy_imp *im)
{
	int r = qy_tables(im);
	if (r < 0)
		return r;
	if (!(im->k = qy_kernel_new(im->s, &im->th, im->err, im->errsize)))
		return -RINGTRACE_ENOMEM;
	if (!(im->printf_et = qy_etab_new(im, NULL, 1, 0)))
		return qy_oom(im);
	im->printf_et->name = im->s_printf;
	int kt = sched_kernel_trace(im->c);
	if (!(im->tr = calloc(im->c->n ? im->c->n : 1, sizeof(*im->tr))))
		return qy_oom(im);
	for (uint32_t i = 0; i < im->c->n; i++) {
		struct qy_tr *tr = &im->tr[i];
		tr->t = im->c->t[i];
		tr->kernel = (int)i == kt;
		tr->nsc = ringtrace_trace_stream_count(tr->t);
		if (!(tr->sc = calloc(tr->nsc ? tr->nsc : 1, sizeof(*tr->sc))) ||
		    qy_process_row(im, i) || qy_trace_events(im, i))
			return qy_oom(im);
	}
	return 0;
}

/* ---- per record ---- */

/* A field's value for the tables: i (QY_NULL_INT), r (NaN) or sid (0). */
struct qy_val {
	int64_t i;
	double r;
	uint32_t sid;  /* string_value of args */
	uint32_t tsid; /* the event table's TEXT column */
};

/* Arrays as {a,b,c}, bytes as hex, into im->buf: the length, or -1. */
static int64_t qy_render(struct qy_imp *im, const struct ringtrace_value *v)
{
	const struct ringtrace_field_desc *f = v->field;
	if (qy_buf(im, (size_t)v->len * 24 + 3))
		return -1;
	char *b = im->buf;
	size_t n = 0;
	if (f->type == RINGTRACE_FT_BYTES) {
		static const char hx[] = "0123456789abcdef";
		const unsigned char *p = v->ptr;
		for (uint32_t i = 0; i < v->len; i++) {
			b[n++] = hx[p[i] >> 4];
			b[n++] = hx[p[i] & 15];
		}
		return (int64_t)n;
	}
	b[n++] = '{';
	for (uint32_t i = 0; i < v->len; i++) {
		const char *e = (const char *)v->ptr + (size_t)i * f->size;
		size_t room = im->bufsize - n;
		int k;
		if (f->type == RINGTRACE_FT_FLOAT_ARRAY)
			k = snprintf(b + n, room, "%s%g", i ? "," : "",
				     rt_field_load_float(e, f->size));
		else if (f->is_signed)
			k = snprintf(b + n, room, "%s%lld", i ? "," : "",
				     (long long)rt_field_sext(rt_field_load(e, f->size), f->size));
		else
			k = snprintf(b + n, room, "%s%llu", i ? "," : "",
				     (unsigned long long)rt_field_load(e, f->size));
		if (k > 0)
			n += (size_t)k < room ? (size_t)k : room - 1;
	}
	b[n++] = '}';
	return (int64_t)n;
}

static int qy_value(struct qy_imp *im, const struct qy_fld *f, const struct ringtrace_value *v,
		    struct qy_val *out)
{
	out->i = QY_NULL_INT;
	out->r = NAN;
	out->sid = out->tsid = 0;
	switch (f->fd->type) {
	case RINGTRACE_FT_INT:
	case RINGTRACE_FT_BOOL:
	case RINGTRACE_FT_POINTER:
		out->i = v->v.i;
		return 0;
	case RINGTRACE_FT_FLOAT:
		out->r = v->v.f;
		return 0;
	case RINGTRACE_FT_ENUM: {
		out->i = v->v.i;
		const struct ringtrace_enum_desc *en = f->fd->enm;
		for (uint32_t e = 0; en && f->enums && e < en->count; e++)
			if (en->values[e].value == out->i) {
				out->sid = out->tsid = f->enums[e];
				return 0;
			}
		/* a value without a name: its number, as text, in the table */
		char num[24];
		int n = snprintf(num, sizeof(num), "%lld", (long long)out->i);
		out->tsid = qy_str(im->s, num, (size_t)n);
		return out->tsid == QY_STR_NOMEM ? -1 : 0;
	}
	case RINGTRACE_FT_STRING:
		out->sid = out->tsid = qy_str(im->s, v->ptr, v->len);
		return out->sid == QY_STR_NOMEM ? -1 : 0;
	default: {
		int64_t n = qy_render(im, v);
		if (n < 0)
			return -1;
		out->sid = out->tsid = qy_str(im->s, im->buf, (size_t)n);
		return out->sid == QY_STR_NOMEM ? -1 : 0;
	}
	}
}

/* A row of the event's table, its id, ts, utid and cpu set: the row or -1. */
static int64_t qy_event_row(struct qy_etab *et, int64_t id, uint64_t ns, int64_t utid, int64_t cpu)
{
	struct qy_table *t = et->t;
	int64_t r = qy_row(t);
	if (r < 0)
		return -1;
	qy_i64(t, EV_ID)[r] = id;
	qy_i64(t, EV_TS)[r] = (int64_t)ns;
	qy_i64(t, EV_UTID)[r] = utid;
	qy_i64(t, EV_CPU)[r] = cpu;
	et->count++;
	return r;
}

static int qy_counter_row(struct qy_imp *im, uint64_t ns, int64_t track, double value, int64_t utid)
{
	struct qy_table *t = im->counter;
	int64_t r = qy_row(t);
	if (r < 0)
		return -1;
	qy_i64(t, CN_ID)[r] = (int64_t)t->base + r;
	qy_i64(t, CN_TS)[r] = (int64_t)ns;
	qy_i64(t, CN_TRACK)[r] = track;
	qy_f64(t, CN_VALUE)[r] = value;
	qy_i64(t, CN_UTID)[r] = utid;
	return 0;
}

/* A slice row (dur given), its depth and parent from the thread's stack:
 * its id, or -1. */
static int64_t qy_slice_row(struct qy_imp *im, const struct qy_thr *th, uint32_t name, uint64_t ns,
			    int64_t dur, int64_t utid, int64_t id, int64_t cpu)
{
	struct qy_table *t = im->slice;
	int64_t r = qy_row(t);
	if (r < 0)
		return -1;
	int64_t sid = (int64_t)t->base + r;
	qy_i64(t, SL_ID)[r] = sid;
	qy_i64(t, SL_TS)[r] = (int64_t)ns;
	qy_i64(t, SL_DUR)[r] = dur;
	qy_i64(t, SL_UTID)[r] = utid;
	qy_sid(t, SL_NAME)[r] = name;
	qy_i64(t, SL_DEPTH)[r] = (int64_t)(th->depth + th->over);
	qy_i64(t, SL_PARENT)[r] = th->depth ? th->stk[th->depth - 1].id : QY_NULL_INT;
	qy_i64(t, SL_ARGS)[r] = id;
	qy_i64(t, SL_CPU)[r] = cpu;
	return sid;
}

/* The slices of a user event: 0, -1 out of memory, or -2 late_dur failed
 * (its error in im->cons_err). */
static int qy_slices(struct qy_imp *im, uint32_t kind, uint32_t name, uint64_t ns, int64_t utid,
		     int64_t id, int64_t cpu)
{
	struct qy_thr *th = &im->th.v[utid];
	if (kind == RINGTRACE_KIND_INSTANT)
		return qy_slice_row(im, th, name, ns, 0, utid, id, cpu) < 0 ? -1 : 0;
	if (kind == RINGTRACE_KIND_BEGIN) {
		if (th->depth >= QY_MAX_DEPTH || th->over) {
			th->over++;
			im->depth_exceeded++;
			return 0;
		}
		if (th->depth == th->cap) {
			uint32_t cap = th->cap ? th->cap * 2 : 8;
			struct qy_open *n = realloc(th->stk, cap * sizeof(*n));
			if (!n)
				return -1;
			th->stk = n;
			th->cap = cap;
		}
		int64_t sid = qy_slice_row(im, th, name, ns, -1, utid, id, cpu);
		if (sid < 0)
			return -1;
		th->stk[th->depth].id = sid;
		th->stk[th->depth++].ts = ns;
		return 0;
	}
	if (kind != RINGTRACE_KIND_END)
		return 0;
	if (th->over) {
		th->over--;
		return 0;
	}
	if (!th->depth) {
		im->end_without_begin++;
		return 0;
	}
	const struct qy_open *op = &th->stk[--th->depth];
	int64_t dur = (int64_t)(ns - op->ts);
	struct qy_table *t = im->slice;
	if (op->id >= (int64_t)t->base) {
		qy_i64(t, SL_DUR)[op->id - (int64_t)t->base] = dur;
		return 0;
	}
	if (im->o && im->o->late_dur) {
		int r = im->o->late_dur(im->o->arg, op->id, dur);
		if (r) {
			im->cons_err = r;
			return -2;
		}
	}
	return 0;
}

/* The utid of a user record's thread (cached per stream): or -1. */
static int64_t qy_user_utid(struct qy_imp *im, struct qy_tr *tr, uint32_t ti,
			    const struct ringtrace_trace_record *rec, int widen)
{
	struct qy_scache *c = rec->stream_index < tr->nsc ? &tr->sc[rec->stream_index] : NULL;
	const char *comm = rec->comm ? rec->comm : "";
	if (c && c->valid && c->tid == rec->tid && strncmp(c->comm, comm, 16) == 0) {
		struct qy_thr *t = &im->th.v[c->utid];
		if (widen) {
			if (rec->ns > t->end)
				t->end = rec->ns;
			if (rec->ns < t->start)
				t->start = rec->ns;
		}
		return c->utid;
	}
	int64_t u = qy_thread_get(&im->th, rec->tid, comm[0] ? comm : NULL, ti, rec->ns, widen);
	if (u >= 0 && c) {
		c->valid = 1;
		c->tid = rec->tid;
		c->utid = u;
		snprintf(c->comm, sizeof(c->comm), "%.16s", comm);
	}
	return u;
}

static void qy_say(struct qy_imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qy_say(struct qy_imp *im, const char *fmt, ...)
{
	if (!im->o || !im->o->on_error)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	im->o->on_error(im->o->arg, msg);
}

/* Whether the field's value is an integer (qy_value sets i from it). */
static int qy_int_field(const struct ringtrace_field_desc *fd)
{
	return fd->type == RINGTRACE_FT_INT || fd->type == RINGTRACE_FT_BOOL ||
	       fd->type == RINGTRACE_FT_POINTER || fd->type == RINGTRACE_FT_ENUM;
}

/* A numeric field's value as a counter's. */
static double qy_number(const struct ringtrace_field_desc *fd, const struct qy_val *v)
{
	if (fd->type == RINGTRACE_FT_FLOAT)
		return v->r;
	if (fd->type == RINGTRACE_FT_INT && !fd->is_signed)
		return (double)(uint64_t)v->i;
	return (double)v->i;
}

/* The fields of an event: its table's columns and args rows (and counters). */
static int qy_fields(struct qy_imp *im, struct qy_tr *tr, const struct qy_ev *ev,
		     const struct ringtrace_trace_record *rec, int64_t row, int64_t utid)
{
	struct qy_etab *et = ev->et;
	struct qy_table *t = et->t;
	for (uint32_t k = 0; k < ev->nf; k++) {
		const struct qy_fld *f = &ev->f[k];
		struct qy_val v;
		if (qy_value(im, f, &im->vals[f->fi], &v))
			return -1;
		uint32_t c = EV_FIRST + k;
		switch (t->cols[c].type) {
		case QY_INT:
			qy_i64(t, c)[row] = v.i;
			/* an integer field's INT64_MIN is its value, not NULL (a
			 * field of another type in this column leaves NULL there) */
			if (__builtin_expect(v.i == QY_NULL_INT, 0) && qy_int_field(f->fd) &&
			    qy_i64_min(t, c, (uint64_t)row))
				return -1;
			break;
		case QY_REAL:
			qy_f64(t, c)[row] = v.r;
			break;
		default:
			qy_sid(t, c)[row] = v.tsid;
		}
		if (f->fd->type == RINGTRACE_FT_ENUM &&
		    qy_args_enum(im->args, et->asrc, (uint64_t)row, k, v.i, v.sid))
			return -1;
		if (et->track && et->track[k] >= 0 && !tr->kernel &&
		    qy_counter_row(im, rec->ns, et->track[k], qy_number(f->fd, &v), utid))
			return -1;
	}
	return 0;
}

/* A ringtrace_printf record of a user trace. */
static int qy_printf_record(struct qy_imp *im, struct qy_tr *tr,
			    const struct ringtrace_trace_record *rec, int64_t id, int64_t utid,
			    int64_t cpu)
{
	int n = ringtrace_trace_format(tr->t, rec, im->buf, im->bufsize);
	if (n >= 0 && (size_t)n >= im->bufsize) {
		if (qy_buf(im, (size_t)n + 1))
			return -1;
		n = ringtrace_trace_format(tr->t, rec, im->buf, im->bufsize);
	}
	/* (a record its site cannot format is damage the reader said and counted) */
	struct qy_val v = {QY_NULL_INT, NAN, 0, 0};
	if (n >= 0 && (v.sid = v.tsid = qy_str(im->s, im->buf, (size_t)n)) == QY_STR_NOMEM)
		return -1;
	int64_t row = qy_event_row(im->printf_et, id, rec->ns, utid, cpu);
	if (row < 0)
		return -1;
	qy_sid(im->printf_et->t, EV_FIRST)[row] = v.sid;
	if (qy_args_event(im->args, id, im->printf_et->asrc, (uint64_t)row))
		return -1;
	if (tr->kernel)
		return 0;
	return qy_slices(im, RINGTRACE_KIND_INSTANT, im->s_printf, rec->ns, utid, id, cpu);
}

/* An event record. 0, -1 out of memory, or -2 (qy_slices). */
static int qy_event(struct qy_imp *im, uint32_t ti, const struct ringtrace_trace_record *rec)
{
	struct qy_tr *tr = &im->tr[ti];
	int64_t id = im->next_event++;
	int64_t cpu = rec->cpu == UINT32_MAX ? QY_NULL_INT : (int64_t)rec->cpu;
	tr->events++;
	if (rec->id == RINGTRACE_EVENT_ID_PRINTF) {
		int64_t utid = tr->kernel ? QY_NULL_INT : qy_user_utid(im, tr, ti, rec, 1);
		if (utid == -1 || qy_printf_record(im, tr, rec, id, utid, cpu))
			return -1;
		return tr->kernel ? qy_kernel_record(im->k, rec, id) : 0;
	}
	const struct qy_ev *ev = rec->id < tr->nid ? tr->ev[rec->id] : NULL;
	int decoded = ev && rt_record_decode(ev->def->fields, ev->def->nfields, rec->data, rec->len,
					     im->vals, 1) >= 0;
	if (!decoded) {
		tr->undecodable++;
		qy_say(im, "%s: stream %" PRIu64 " at byte %" PRIu64 ": event %s: %s",
		       im->c->dirs[ti], rec->stream, rec->file_offset,
		       ringtrace_trace_event_name(rec),
		       ev ? ringtrace_last_error() : "no table for its definition");
		if (!ev)
			return 0;
	}
	int64_t utid;
	if (!tr->kernel)
		utid = qy_user_utid(im, tr, ti, rec, 1);
	else if (decoded && ev->pid_fi >= 0)
		utid = qy_thread_get(&im->th, im->vals[ev->pid_fi].v.i, NULL, QY_NULL_INT, rec->ns,
				     1);
	else
		utid = QY_NULL_INT;
	if (utid == -1)
		return -1;
	int64_t row = qy_event_row(ev->et, id, rec->ns, utid, cpu);
	/* (an event whose fields could not be read has no args rows) */
	if (row < 0 || qy_args_event(im->args, id, decoded ? ev->et->asrc : -1, (uint64_t)row) ||
	    (decoded && qy_fields(im, tr, ev, rec, row, utid)))
		return -1;
	if (tr->kernel)
		return qy_kernel_record(im->k, rec, id);
	return qy_slices(im, ev->def->kind, ev->et->name, rec->ns, utid, id, cpu);
}

/* A lost-events record: a row of loss. */
static int qy_lost(struct qy_imp *im, uint32_t ti, const struct ringtrace_trace_record *rec)
{
	struct qy_tr *tr = &im->tr[ti];
	int64_t utid = tr->kernel ? QY_NULL_INT : qy_user_utid(im, tr, ti, rec, 0);
	struct qy_table *t = im->loss;
	int64_t r = utid == -1 ? -1 : qy_row(t);
	if (r < 0)
		return -1;
	qy_i64(t, LO_TS)[r] = (int64_t)rec->ns;
	qy_i64(t, LO_UPID)[r] = ti;
	qy_i64(t, LO_UTID)[r] = utid;
	qy_i64(t, LO_STREAM)[r] = (int64_t)rec->stream;
	qy_i64(t, LO_DROPPED)[r] = (int64_t)rec->dropped;
	qy_i64(t, LO_OVERRUN)[r] = (int64_t)rec->overrun;
	return tr->kernel ? qy_kernel_record(im->k, rec, -1) : 0;
}

/* ---- the end ---- */

static int qy_thread_rows(struct qy_imp *im)
{
	struct qy_table *t = im->thread;
	for (uint32_t u = 0; u < im->th.n; u++) {
		const struct qy_thr *th = &im->th.v[u];
		int64_t r = qy_row(t);
		if (r < 0)
			return -1;
		qy_i64(t, TH_UTID)[r] = u;
		qy_i64(t, TH_TID)[r] = th->tid;
		qy_sid(t, TH_NAME)[r] = th->name;
		qy_i64(t, TH_UPID)[r] = th->upid;
		if (th->start <= th->end) {
			qy_i64(t, TH_START)[r] = (int64_t)th->start;
			qy_i64(t, TH_END)[r] = (int64_t)th->end;
		}
	}
	return 0;
}

static int qy_etable_row(struct qy_imp *im, const struct qy_etab *et)
{
	struct qy_table *t = im->etable;
	uint32_t tn = qy_strz(im->s, et->t->name),
		 kind = qy_strz(im->s, et == im->printf_et ? "printf" : qy_kind_name(et->kind));
	int64_t r = tn == QY_STR_NOMEM || kind == QY_STR_NOMEM ? -1 : qy_row(t);
	if (r < 0)
		return -1;
	qy_sid(t, ET_EVENT)[r] = et->name;
	qy_sid(t, ET_TABLE)[r] = tn;
	qy_sid(t, ET_KIND)[r] = kind;
	qy_i64(t, ET_FIELDS)[r] = et->nf;
	qy_i64(t, ET_COUNT)[r] = (int64_t)et->count;
	return 0;
}

static int qy_trace_stats(struct qy_imp *im, uint32_t ti)
{
	const struct qy_tr *tr = &im->tr[ti];
	uint64_t dropped = 0, overrun = 0, unwritten = 0, rejected = 0;
	for (uint32_t i = 0; i < ringtrace_trace_stream_count(tr->t); i++) {
		dropped += ringtrace_trace_stream(tr->t, i)->dropped;
		overrun += ringtrace_trace_stream(tr->t, i)->overrun;
		unwritten += ringtrace_trace_stream(tr->t, i)->unwritten;
	}
	for (uint32_t i = 0; i < ringtrace_trace_event_count(tr->t); i++)
		rejected += ringtrace_trace_event(tr->t, i)->rejected;
	struct qy_store *s = im->s;
	return qy_stat(s, "events", ti, "info", "trace", (int64_t)tr->events,
		       "events imported from the trace") ||
	       qy_stat(s, "events_dropped", ti, "data_loss", "trace", (int64_t)dropped,
		       "events its writers dropped (the buffer full)") ||
	       qy_stat(s, "events_overrun", ti, "data_loss", "trace", (int64_t)overrun,
		       "events lost to recycled pages") ||
	       qy_stat(s, "events_unwritten", ti, "data_loss", "trace", (int64_t)unwritten,
		       "events the recorder could not write (the disk full, an I/O error)") ||
	       qy_stat(s, "trace_errors", ti, "error", "trace",
		       (int64_t)ringtrace_trace_errors(tr->t),
		       "damage found reading the trace (what came before it was imported)") ||
	       qy_stat(s, "events_undecodable", ti, "error", "trace", (int64_t)tr->undecodable,
		       "events whose fields could not be read (imported without them)") ||
	       qy_stat(s, "filter_rejected", ti, "info", "trace", (int64_t)rejected,
		       "calls the events' filters kept out of the buffer");
}

static int qy_finish(struct qy_imp *im)
{
	uint64_t unclosed = 0;
	for (uint32_t u = 0; u < im->th.n; u++)
		unclosed += im->th.v[u].depth + im->th.v[u].over;
	if (qy_thread_rows(im) || qy_etable_row(im, im->printf_et))
		return -1;
	for (uint32_t i = 0; i < im->net; i++)
		if (qy_etable_row(im, im->et[i]))
			return -1;
	for (uint32_t i = 0; i < im->c->n; i++)
		if (qy_trace_stats(im, i))
			return -1;
	struct qy_store *s = im->s;
	return qy_stat(s, "traces_failed", QY_NULL_INT, "error", "trace", im->c->failed,
		       "traces of the collection that could not be opened") ||
	       qy_stat(s, "slice_unclosed", QY_NULL_INT, "info", "analysis", (int64_t)unclosed,
		       "begin events never ended (their slices' dur is -1)") ||
	       qy_stat(s, "slice_end_without_begin", QY_NULL_INT, "data_loss", "analysis",
		       (int64_t)im->end_without_begin,
		       "end events with no begin open on their thread") ||
	       qy_stat(s, "slice_depth_exceeded", QY_NULL_INT, "error", "analysis",
		       (int64_t)im->depth_exceeded,
		       "begin events nested deeper than 256 on their thread (no slice)");
}

static void qy_imp_free(struct qy_imp *im)
{
	for (uint32_t i = 0; im->tr && i < im->c->n; i++) {
		struct qy_tr *tr = &im->tr[i];
		for (uint32_t e = 0; e < tr->nevs; e++) {
			for (uint32_t k = 0; tr->evs[e].f && k < tr->evs[e].nf; k++)
				free(tr->evs[e].f[k].enums);
			free(tr->evs[e].f);
		}
		free(tr->evs);
		free(tr->ev);
		free(tr->sc);
	}
	free(im->tr);
	for (uint32_t i = 0; i < im->net; i++) {
		free(im->et[i]->track);
		free(im->et[i]);
	}
	if (im->printf_et)
		free(im->printf_et->track);
	free(im->printf_et);
	free(im->et);
	free(im->etmap);
	free(im->buf);
	qy_kernel_free(im->k);
	qy_threads_free(&im->th);
}

/* Every record, merged by time. */
static int qy_records(struct qy_imp *im, struct qy_import_result *res)
{
	struct coll_merge m;
	if (coll_merge_init(&m, im->c) < 0)
		return qy_oom(im);
	const struct qy_import_opts *o = im->o;
	uint64_t since = 0;
	struct ringtrace_trace_record *rec;
	int ti, r = 0;
	while ((ti = coll_merge_next(&m, &rec)) >= 0) {
		res->records++;
		if (rec->ns > im->last_ns)
			im->last_ns = rec->ns;
		r = rec->kind == RINGTRACE_TRACE_EVENT ? qy_event(im, (uint32_t)ti, rec)
						       : qy_lost(im, (uint32_t)ti, rec);
		if (r) {
			r = r == -1 ? qy_oom(im)
				    : qy_fail(im,
					      im->cons_err < 0 ? -im->cons_err : RINGTRACE_EINVAL,
					      "the import's consumer failed (late_dur: %d)",
					      im->cons_err);
			break;
		}
		if (o && o->chunk && o->chunk_events && ++since == o->chunk_events) {
			since = 0;
			if ((r = o->chunk(o->arg, im->s, 0)) != 0) {
				r = qy_fail(im, r < 0 ? -r : RINGTRACE_EINVAL,
					    "the import's consumer failed");
				break;
			}
		}
	}
	coll_merge_free(&m);
	return r;
}

int qy_import(struct qy_store *s, const struct coll *c, const struct qy_import_opts *o,
	      struct qy_import_result *r, char *err, size_t errsize)
{
	struct qy_import_result res = {0, 0, 0};
	struct qy_imp im;
	memset(&im, 0, sizeof(im));
	im.s = s;
	im.c = c;
	im.o = o;
	im.th.s = s;
	im.err = err;
	im.errsize = errsize;
	if (err && errsize)
		err[0] = 0;
	int setup = qy_setup(&im), ret = setup;
	if (!setup) {
		ret = qy_records(&im, &res);
		/* what was imported stays queryable, an error or not */
		if (qy_kernel_finish(im.k, im.last_ns) && !ret)
			ret = qy_oom(&im);
		if (qy_finish(&im) && !ret)
			ret = qy_oom(&im);
	}
	for (uint32_t i = 0; im.tr && i < c->n; i++) {
		res.events += im.tr[i].events;
		res.errors += ringtrace_trace_errors(c->t[i]) + im.tr[i].undecodable;
	}
	if (!ret && o && o->chunk) {
		int cr = o->chunk(o->arg, s, 1);
		if (cr)
			ret = qy_fail(&im, cr < 0 ? -cr : RINGTRACE_EINVAL,
				      "the import's consumer failed");
	}
	qy_imp_free(&im);
	if (r)
		*r = res;
	return ret;
}
