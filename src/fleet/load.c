/*
 * One trace directory loaded into the fleet's tables (fleet_api.h, fl_load).
 *
 * The trace is imported by the query layer exactly as `ringtrace query`
 * imports it (qy_import), a chunk of records at a time: at each chunk the
 * store's rows are encoded as RowBinary, with the four leading columns,
 * into one batch per fleet table, and the store's tables are cleared, so
 * that memory holds one chunk and the batches whatever the trace's size.
 * A batch is sent (one INSERT) when it holds batch_rows rows, and every
 * batch at the end.
 *
 * A row once sent cannot be changed, so a slice still open at a chunk's
 * end (dur -1 until its end is read) is kept back here, a copy of its
 * row, and sent with its dur when late_dur gives it, or at the end (dur
 * -1, a begin never ended, as `ringtrace query` has it).
 *
 * The `event` table is the union of the per-event tables (their first
 * columns and the event's name), which differ between traces and are not
 * loaded themselves; `args` is read from the query layer's computed
 * table (qy_args_iter: the same rows as its virtual table, without
 * SQLite's per-value calls).
 *
 * Identity (docs/fleet.md): trace_uuid, a single trace's own uuid; a
 * collection's is made from its traces' (their uuids in sorted order,
 * hashed into a version-8 uuid), a trace without one from its metadata.
 * The digest, a hash of every trace's name and metadata file, tells two
 * dumps of one recorder apart (a snapshot's metadata holds its own
 * counts) and the same dump loaded twice alike. The only value of ours
 * that goes into SQL text is trace_uuid (hex made here); everything from
 * the trace travels in RowBinary bodies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis_api.h"
#include "fleet/fleet_api.h"

#define LD_MAX_TABLES 32u
#define LD_LEAD 4u /* host, trace_uuid, load_id, day */
/* A batch is sent at this size too, whatever its rows (long strings, or
 * many rows): the bodies in memory stay a few times this */
#define LD_BATCH_BYTES (64u << 20)
#define LD_META_MAX (64u << 20) /* a metadata file hashed, at most */

enum { V_I64, V_U64, V_F64, V_STR };

struct ld_spec {
	uint8_t v, nullable;
};

struct ld_tab {
	const struct fl_tabledef *def;
	struct ld_spec spec[64];
	struct fl_buf b;  /* the batch being made */
	uint64_t nbuf;    /* its rows */
	uint64_t rows;    /* rows of this load, sent or in b */
	uint32_t batches; /* sent (--save names) */
	char *insert;     /* its INSERT statement */
};

/* A slice row kept back: the store's columns (a text as its string id). */
enum { SL_ID, SL_TS, SL_DUR, SL_UTID, SL_NAME, SL_DEPTH, SL_PARENT, SL_ARGS, SL_CPU, SL_N };
struct ld_slice {
	int64_t v[SL_N];
	int done; /* its dur is known */
};

/*
 * The sender: a thread of its own sends the batches while the import goes
 * on, so that reading and encoding the trace overlap the server's work on
 * the batch before (a load is otherwise the sum of both). One batch in
 * flight and LD_QUEUE waiting for it, their bodies reused: memory stays
 * bounded (two bodies besides the ones being filled), and an import
 * faster than the server waits. It alone uses the server during the
 * import (one thread per fl_ch); the loads rows and the statements are
 * sent by the loading thread when it is not running.
 */
#define LD_QUEUE 1

struct ld_job {
	struct fl_buf b;
	const struct ld_tab *t;
};

struct ld_sender {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a job queued or done, or stop */
	struct ld_job q[LD_QUEUE];
	uint32_t head, n;
	int busy, stop, running;
	struct fl_buf spare[LD_QUEUE]; /* emptied bodies, reused */
	uint32_t nspare;
	int rc; /* its first error, with err */
	char err[768];
	uint64_t bytes;
};

struct ld {
	const struct fl_load_opts *o;
	struct ld_sender snd;
	struct fl_ch *ch;
	const char *dir;
	struct fl_buf pre; /* the leading columns, the same on every row */
	struct ld_tab tab[LD_MAX_TABLES];
	uint32_t ntab;
	int t_event, t_args, t_slice, t_loads;
	struct ld_slice *pend;
	uint64_t npend, cappend;
	uint64_t lost;  /* events_dropped + events_overrun of stats */
	uint64_t bytes; /* RowBinary bytes sent */
	char *err;
	size_t errsize;
	int rc; /* the first error */
	/* identity */
	char uuid[37], digest[33], host[256], trace[256];
	uint64_t load_id;
	uint16_t day;
	int has_offset;
	int64_t offset;
};

static int ld_fail(struct ld *l, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ld_fail(struct ld *l, int rc, const char *fmt, ...)
{
	if (l->rc)
		return l->rc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->err, l->errsize, fmt, ap);
	va_end(ap);
	l->rc = rc;
	return rc;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- RowBinary of the store's values ---- */

static int rb_raw(struct fl_buf *b, const void *p, size_t n)
{
	if (fl_buf_reserve(b, n) < 0)
		return FL_ENOMEM;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* A DateTime: seconds since the epoch, UInt32. */
static int rb_u32(struct fl_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	return rb_raw(b, x, 4);
}

static int rb_strz(struct fl_buf *b, const char *s)
{
	return fl_rb_str(b, s, strlen(s));
}

/*
 * A store value (raw: the int64, the double's bits or the string id; qtype
 * 0: the store has no such column) as a column of spec sp: NULL where the
 * store holds NULL and the column is Nullable, else the type's zero. An
 * INT's QY_NULL_INT is NULL unless minval (the store marked it a value,
 * qy_int_null).
 */
static int enc_value(struct fl_buf *b, const struct qy_store *s, struct ld_spec sp, uint8_t qtype,
		     uint64_t raw, int minval)
{
	double d = 0;
	int isnull = 1;
	if (qtype == QY_INT) {
		isnull = (int64_t)raw == QY_NULL_INT && !minval;
	} else if (qtype == QY_REAL) {
		memcpy(&d, &raw, sizeof(d));
		isnull = isnan(d);
	} else if (qtype == QY_TEXT) {
		isnull = raw == 0;
	}
	if (sp.nullable) {
		if (isnull)
			return fl_rb_null(b);
		if (fl_rb_notnull(b) < 0)
			return FL_ENOMEM;
	}
	switch (sp.v) {
	case V_I64:
	case V_U64:
		if (qtype == QY_REAL && !isnull)
			return fl_rb_i64(b, (int64_t)d);
		return fl_rb_i64(b, isnull || qtype != QY_INT ? 0 : (int64_t)raw);
	case V_F64:
		if (qtype == QY_INT && !isnull)
			d = (double)(int64_t)raw;
		return fl_rb_f64(b, isnull ? 0 : d);
	default:
		if (qtype == QY_TEXT && !isnull) {
			size_t len;
			const char *p = qy_str_get(s, (uint32_t)raw, &len);
			return fl_rb_str(b, p ? p : "", p ? len : 0);
		}
		return fl_rb_str(b, "", 0);
	}
}

/* A store column's value at row as enc_value's raw. */
static uint64_t raw_at(const struct qy_col *c, uint64_t row)
{
	if (c->type == QY_TEXT)
		return ((const uint32_t *)c->v)[row];
	uint64_t v;
	memcpy(&v, (const char *)c->v + row * 8, 8);
	return v;
}

/* A store column's value at row as enc_value's minval. */
static int minval_at(const struct qy_col *c, uint64_t row)
{
	return c->type == QY_INT && c->nvmin && qy_col_min_at(c, row);
}

static int send_batch(struct ld *l, struct ld_tab *t);
static uint64_t batch_rows(const struct ld *l);

/* A row's start: the leading columns; a full batch sent first (a chunk's
 * rows of one table may be many batches: args has a row per field). */
static int row_start(struct ld *l, struct ld_tab *t)
{
	if ((t->nbuf >= batch_rows(l) || t->b.len >= LD_BATCH_BYTES) && send_batch(l, t) < 0)
		return l->rc;
	t->nbuf++;
	t->rows++;
	return rb_raw(&t->b, l->pre.p, l->pre.len);
}

/* ---- the batches ---- */

static int save_batch(struct ld *l, struct ld_tab *t)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.%u.rowbinary", l->o->save_dir, t->def->name,
		 t->batches);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return ld_fail(l, FL_EUSAGE, "--save: %s: %s", path, strerror(errno));
	size_t off = 0;
	while (off < t->b.len) {
		ssize_t n = write(fd, t->b.p + off, t->b.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return ld_fail(l, FL_EUSAGE, "--save: %s: %s", path, strerror(e));
		}
		off += (size_t)n;
	}
	if (close(fd) < 0)
		return ld_fail(l, FL_EUSAGE, "--save: %s: %s", path, strerror(errno));
	return 0;
}

static const char *cluster_settings(const struct ld *l)
{
	/* an INSERT that returned is on its shard, not queued on this server */
	return l->o->target->cluster ? "insert_distributed_sync=1" : NULL;
}

/* One INSERT of a batch body into t's table: 0, or the error said in err. */
static int insert(struct ld *l, const struct ld_tab *t, const struct fl_buf *b, char *err,
		  size_t errsize)
{
	char e[512] = "";
	int rc = fl_ch_insert(l->ch, t->insert, cluster_settings(l), b->p, b->len, e, sizeof(e));
	if (rc < 0)
		snprintf(err, errsize, "inserting into %s.%s: %s", l->o->target->database,
			 t->def->name, e);
	return rc;
}

static void *sender_main(void *arg)
{
	struct ld *l = arg;
	struct ld_sender *s = &l->snd;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->n && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->n)
			break;
		struct ld_job j = s->q[s->head];
		s->head = (s->head + 1) % LD_QUEUE;
		s->n--;
		s->busy = 1;
		int failed = s->rc;
		pthread_mutex_unlock(&s->mu);
		char e[768] = "";
		/* after an error the rest is dropped: the load is incomplete anyway */
		int rc = failed ? 0 : insert(l, j.t, &j.b, e, sizeof(e));
		pthread_mutex_lock(&s->mu);
		s->busy = 0;
		if (rc < 0 && !s->rc) {
			s->rc = rc;
			snprintf(s->err, sizeof(s->err), "%s", e);
		} else if (!failed) {
			s->bytes += j.b.len;
		}
		j.b.len = 0;
		if (s->nspare < LD_QUEUE)
			s->spare[s->nspare++] = j.b;
		else
			fl_buf_free(&j.b);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int sender_start(struct ld *l)
{
	struct ld_sender *s = &l->snd;
	if (pthread_mutex_init(&s->mu, NULL) != 0)
		return ld_fail(l, FL_ENOMEM, "cannot make the sender's lock");
	if (pthread_cond_init(&s->cv, NULL) != 0) {
		pthread_mutex_destroy(&s->mu);
		return ld_fail(l, FL_ENOMEM, "cannot make the sender's condition");
	}
	if (pthread_create(&s->th, NULL, sender_main, l) != 0) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		return ld_fail(l, FL_ENOMEM, "cannot start the sender thread");
	}
	s->running = 1;
	return 0;
}

/* Every batch queued sent (or dropped after an error), the thread ended;
 * its error becomes the load's. */
static int sender_stop(struct ld *l)
{
	struct ld_sender *s = &l->snd;
	if (!s->running)
		return l->rc;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	s->running = 0;
	for (uint32_t i = 0; i < s->nspare; i++)
		fl_buf_free(&s->spare[i]);
	s->nspare = 0;
	l->bytes += s->bytes;
	if (s->rc)
		ld_fail(l, s->rc, "%s", s->err);
	return l->rc;
}

/* t's batch handed to the sender (waiting while LD_QUEUE wait for it);
 * t gets an empty body. */
static int sender_queue(struct ld *l, struct ld_tab *t)
{
	struct ld_sender *s = &l->snd;
	pthread_mutex_lock(&s->mu);
	while (s->n == LD_QUEUE && !s->rc)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->rc) {
		int rc = s->rc;
		char e[768];
		snprintf(e, sizeof(e), "%s", s->err);
		pthread_mutex_unlock(&s->mu);
		return ld_fail(l, rc, "%s", e);
	}
	s->q[(s->head + s->n) % LD_QUEUE] = (struct ld_job){t->b, t};
	s->n++;
	t->b = s->nspare ? s->spare[--s->nspare] : (struct fl_buf){0};
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* The batch of t sent (if it has rows): queued for the sender while it
 * runs, else sent here. */
static int send_batch(struct ld *l, struct ld_tab *t)
{
	if (!t->nbuf || l->rc)
		return l->rc;
	/* (the loads rows are no data: not saved) */
	if (l->o->save_dir && (int)(t - l->tab) != l->t_loads && save_batch(l, t) < 0)
		return l->rc;
	if (l->snd.running) {
		if (sender_queue(l, t) < 0)
			return l->rc;
	} else {
		char e[768] = "";
		int rc = insert(l, t, &t->b, e, sizeof(e));
		if (rc < 0)
			return ld_fail(l, rc, "%s", e);
		l->bytes += t->b.len;
		t->b.len = 0;
	}
	t->batches++;
	t->nbuf = 0;
	return 0;
}

static uint64_t batch_rows(const struct ld *l)
{
	return l->o->batch_rows ? l->o->batch_rows : 1000000;
}

static int send_full(struct ld *l, int all)
{
	for (uint32_t i = 0; i < l->ntab && !l->rc; i++)
		if (all || l->tab[i].nbuf >= batch_rows(l) || l->tab[i].b.len >= LD_BATCH_BYTES)
			send_batch(l, &l->tab[i]);
	return l->rc;
}

/* ---- the chunks ---- */

/* A stored table of the store into its fleet table (columns by name). */
static int enc_stored(struct ld *l, struct ld_tab *t, struct qy_store *s, struct qy_table *st)
{
	const struct fl_tabledef *d = t->def;
	const struct qy_col *col[64];
	for (uint32_t c = LD_LEAD; c < d->ncols; c++) {
		int k = qy_col_find(st, d->cols[c].name);
		col[c] = k >= 0 ? &st->cols[k] : NULL;
	}
	int stats = strcmp(d->name, "stats") == 0;
	for (uint64_t r = 0; r < st->nrows; r++) {
		if (row_start(l, t) < 0)
			return FL_ENOMEM;
		for (uint32_t c = LD_LEAD; c < d->ncols; c++)
			if (enc_value(&t->b, s, t->spec[c], col[c] ? col[c]->type : 0,
				      col[c] ? raw_at(col[c], r) : 0,
				      col[c] ? minval_at(col[c], r) : 0) < 0)
				return FL_ENOMEM;
		if (stats && col[LD_LEAD] && col[LD_LEAD + 4]) {
			/* the events lost, for the loads row: stats' name and value */
			size_t len;
			const char *n = qy_str_get(s, (uint32_t)raw_at(col[LD_LEAD], r), &len);
			int64_t v = (int64_t)raw_at(col[LD_LEAD + 4], r);
			if (n && v > 0 &&
			    ((len == 14 && memcmp(n, "events_dropped", 14) == 0) ||
			     (len == 14 && memcmp(n, "events_overrun", 14) == 0)))
				l->lost += (uint64_t)v;
		}
	}
	return 0;
}

static int enc_slice(struct ld *l, const struct qy_store *s, const int64_t *v)
{
	struct ld_tab *t = &l->tab[l->t_slice];
	static const uint8_t qt[SL_N] = {QY_INT, QY_INT, QY_INT, QY_INT, QY_TEXT,
					 QY_INT, QY_INT, QY_INT, QY_INT};
	if (row_start(l, t) < 0)
		return FL_ENOMEM;
	for (uint32_t c = 0; c < SL_N; c++)
		if (enc_value(&t->b, s, t->spec[LD_LEAD + c], qt[c], (uint64_t)v[c], 0) < 0)
			return FL_ENOMEM;
	return 0;
}

/* The slices kept back whose dur came (all of them at the end), sent;
 * the others kept, in id order. */
static int send_pending(struct ld *l, const struct qy_store *s, int last)
{
	uint64_t k = 0;
	for (uint64_t i = 0; i < l->npend; i++) {
		if (l->pend[i].done || last) {
			if (enc_slice(l, s, l->pend[i].v) < 0)
				return FL_ENOMEM;
		} else {
			l->pend[k++] = l->pend[i];
		}
	}
	l->npend = k;
	return 0;
}

/* The store's slices: those still open kept back unless last. */
static int enc_slices(struct ld *l, struct qy_store *s, struct qy_table *st, int last)
{
	static const char *const names[SL_N] = {"id",    "ts",        "dur",        "utid", "name",
						"depth", "parent_id", "arg_set_id", "cpu"};
	const struct qy_col *col[SL_N];
	for (uint32_t c = 0; c < SL_N; c++) {
		int k = qy_col_find(st, names[c]);
		if (k < 0 || st->cols[k].type != (c == SL_NAME ? QY_TEXT : QY_INT))
			return ld_fail(l, FL_ETRACE, "the query layer's slice table has no %s",
				       names[c]);
		col[c] = &st->cols[k];
	}
	for (uint64_t r = 0; r < st->nrows; r++) {
		struct ld_slice sl = {.done = 0};
		for (uint32_t c = 0; c < SL_N; c++)
			sl.v[c] = (int64_t)raw_at(col[c], r);
		if (sl.v[SL_DUR] != -1 || last) {
			if (enc_slice(l, s, sl.v) < 0)
				return FL_ENOMEM;
			continue;
		}
		if (l->npend == l->cappend) {
			uint64_t cap = l->cappend ? l->cappend * 2 : 1024;
			struct ld_slice *p = realloc(l->pend, cap * sizeof(*p));
			if (!p)
				return FL_ENOMEM;
			l->pend = p;
			l->cappend = cap;
		}
		l->pend[l->npend++] = sl;
	}
	return 0;
}

/* An event table's rows into `event`: id, ts, utid, cpu and its name. */
static int enc_events(struct ld *l, struct qy_store *s, struct qy_table *st, uint32_t name)
{
	struct ld_tab *t = &l->tab[l->t_event];
	if (st->ncols < 4)
		return 0;
	for (uint64_t r = 0; r < st->nrows; r++) {
		if (row_start(l, t) < 0)
			return FL_ENOMEM;
		for (uint32_t c = 0; c < 4; c++)
			if (enc_value(&t->b, s, t->spec[LD_LEAD + c], st->cols[c].type,
				      raw_at(&st->cols[c], r), minval_at(&st->cols[c], r)) < 0)
				return FL_ENOMEM;
		if (enc_value(&t->b, s, t->spec[LD_LEAD + 4], QY_TEXT, name, 0) < 0)
			return FL_ENOMEM;
	}
	return 0;
}

static int enc_args(struct ld *l, struct qy_store *s, const struct qy_table *st)
{
	struct ld_tab *t = &l->tab[l->t_args];
	struct qy_args_iter it;
	struct qy_args_row r;
	if (qy_args_iter_init(&it, st) < 0)
		return 0;
	const struct ld_spec *sp = &t->spec[LD_LEAD];
	while (qy_args_iter_next(&it, &r) == 1) {
		uint64_t real;
		memcpy(&real, &r.real_value, 8);
		if (row_start(l, t) < 0 ||
		    enc_value(&t->b, s, sp[0], QY_INT, (uint64_t)r.arg_set_id, 0) ||
		    enc_value(&t->b, s, sp[1], QY_TEXT, r.key, 0) ||
		    enc_value(&t->b, s, sp[2], QY_INT, (uint64_t)r.int_value, !r.int_null) ||
		    enc_value(&t->b, s, sp[3], QY_TEXT, r.string_value, 0) ||
		    enc_value(&t->b, s, sp[4], QY_REAL, real, 0) ||
		    enc_value(&t->b, s, sp[5], QY_TEXT, r.value_type, 0))
			return FL_ENOMEM;
	}
	return 0;
}

/* The fleet table of a store table (-1: none: event_table, event_column). */
static int fleet_of(const struct ld *l, const struct qy_table *st)
{
	for (uint32_t i = 0; i < l->ntab; i++)
		if ((int)i != l->t_event && (int)i != l->t_args && (int)i != l->t_slice &&
		    (int)i != l->t_loads && strcmp(l->tab[i].def->name, st->name) == 0)
			return (int)i;
	return -1;
}

static int on_chunk(void *arg, struct qy_store *s, int last)
{
	struct ld *l = arg;
	int rc = 0;
	if (l->rc)
		return -1;
	/* what late_dur completed since the last chunk first: the ids ascend */
	rc = send_pending(l, s, 0);
	for (uint32_t i = 0; !rc && i < qy_table_count(s); i++) {
		struct qy_table *st = qy_table_at(s, i);
		uint32_t ev = qy_event_name(st);
		int f;
		if (st->ops)
			rc = enc_args(l, s, st);
		else if (ev)
			rc = enc_events(l, s, st, ev);
		else if (strcmp(st->name, "slice") == 0)
			rc = enc_slices(l, s, st, last);
		else if ((f = fleet_of(l, st)) >= 0)
			rc = enc_stored(l, &l->tab[f], s, st);
	}
	if (!rc && last)
		rc = send_pending(l, s, 1);
	if (rc < 0) {
		ld_fail(l, rc, "%s", rc == FL_ENOMEM ? "out of memory" : "encoding the rows");
		return -1;
	}
	for (uint32_t i = 0; i < qy_table_count(s); i++)
		qy_table_clear(qy_table_at(s, i));
	return send_full(l, last) < 0 ? -1 : 0;
}

static int on_late_dur(void *arg, int64_t slice_id, int64_t dur)
{
	struct ld *l = arg;
	uint64_t a = 0, b = l->npend;
	while (a < b) {
		uint64_t m = a + (b - a) / 2;
		if (l->pend[m].v[SL_ID] < slice_id)
			a = m + 1;
		else
			b = m;
	}
	if (a < l->npend && l->pend[a].v[SL_ID] == slice_id) {
		l->pend[a].v[SL_DUR] = dur;
		l->pend[a].done = 1;
	}
	return 0;
}

/* ---- identity ---- */

/* A 128-bit hash of bytes (not a cryptographic one: it tells dumps apart,
 * nobody forges them against it): two 64-bit lanes of different mixing. */
struct ld_hash {
	uint64_t a, b, n;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void hash_init(struct ld_hash *h)
{
	h->a = 0xcbf29ce484222325ull;
	h->b = 0x6a09e667f3bcc909ull;
	h->n = 0;
}

static void hash_add(struct ld_hash *h, const void *p, size_t n)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++) {
		h->a = (h->a ^ s[i]) * 0x100000001b3ull;
		h->b = (h->b + s[i] + 1) * 0x9e3779b97f4a7c15ull;
		h->b ^= h->b >> 29;
	}
	h->n += n;
}

static void hash_end(struct ld_hash *h, uint8_t out[16])
{
	uint64_t a = mix64(h->a ^ h->n), b = mix64(h->b ^ (a << 1 | a >> 63));
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(a >> (8 * i));
		out[8 + i] = (uint8_t)(b >> (8 * i));
	}
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

static void uuid_text(const uint8_t u[16], char out[37])
{
	char h[33];
	hex(u, 16, h);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

/* A uuid of our own making from a hash: version 8 (RFC 9562's custom
 * version), the RFC variant. */
static void uuid_v8(uint8_t u[16])
{
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x80);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

/* A trace's metadata file into h. 0, or -1 (errno). */
static int hash_file(struct ld_hash *h, const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	uint8_t buf[65536];
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0 || total >= LD_META_MAX)
			break;
		hash_add(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	close(fd);
	return 0;
}

/* One trace's identity text: its uuid's hex, or its metadata's hash. */
static int trace_id(ringtrace_trace *t, const char *dir, char out[33])
{
	uint8_t u[16];
	if (ringtrace_trace_uuid(t, u) == 1) {
		hex(u, 16, out);
		return 0;
	}
	struct ld_hash h;
	hash_init(&h);
	if (hash_file(&h, dir) < 0)
		return -1;
	hash_end(&h, u);
	hex(u, 16, out);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* trace_uuid and digest of the collection. */
static int identity(struct ld *l, const struct coll *c)
{
	struct ld_hash h;
	uint8_t u[16];
	hash_init(&h);
	for (uint32_t i = 0; i < c->n; i++) {
		const char *name = c->names && c->names[i] ? c->names[i] : "";
		hash_add(&h, name, strlen(name) + 1);
		if (hash_file(&h, c->dirs[i]) < 0)
			return ld_fail(l, FL_ETRACE, "%s/metadata: %s", c->dirs[i],
				       strerror(errno));
	}
	hash_end(&h, u);
	hex(u, 16, l->digest);
	if (c->n == 1 && !c->is_collection && ringtrace_trace_uuid(c->t[0], u) == 1) {
		uuid_text(u, l->uuid);
		return 0;
	}
	char(*ids)[33] = calloc(c->n ? c->n : 1, sizeof(*ids));
	if (!ids)
		return ld_fail(l, FL_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < c->n; i++)
		if (trace_id(c->t[i], c->dirs[i], ids[i]) < 0) {
			free(ids);
			return ld_fail(l, FL_ETRACE, "%s/metadata: %s", c->dirs[i],
				       strerror(errno));
		}
	/* the traces' order in the directory is no part of the identity */
	qsort(ids, c->n, sizeof(*ids), cmp_id);
	hash_init(&h);
	hash_add(&h, "ringtrace collection", 21);
	for (uint32_t i = 0; i < c->n; i++)
		hash_add(&h, ids[i], 33);
	free(ids);
	hash_end(&h, u);
	uuid_v8(u);
	uuid_text(u, l->uuid);
	return 0;
}

/* Whether a trace is a collection's kernel trace (process pid 0, "kernel"). */
static int is_kernel(const struct ringtrace_trace_process *p)
{
	return p->pid == 0 && strcmp(p->procname, "kernel") == 0;
}

/* host: the first recorded program's host name, else the kernel trace's;
 * the day: the recording's start (the earliest trace's clock base) in
 * wall-clock time where the trace says its clock's offset, else the day
 * of the load. */
static void host_and_day(struct ld *l, const struct coll *c)
{
	const char *kernel_host = NULL;
	uint64_t start = UINT64_MAX;
	l->host[0] = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		struct ringtrace_trace_process p;
		if (ringtrace_trace_process(c->t[i], &p) == 1 && p.hostname && p.hostname[0]) {
			if (is_kernel(&p) && !kernel_host)
				kernel_host = p.hostname;
			else if (!is_kernel(&p) && !l->host[0])
				snprintf(l->host, sizeof(l->host), "%s", p.hostname);
		}
		const struct ringtrace_trace_clock *ck = ringtrace_trace_clock(c->t[i]);
		int64_t off;
		if (ck && ck->base_ns < start &&
		    ringtrace_trace_realtime_offset(c->t[i], &off) == 1) {
			start = ck->base_ns;
			l->offset = off;
			l->has_offset = 1;
		}
	}
	if (!l->host[0] && kernel_host)
		snprintf(l->host, sizeof(l->host), "%s", kernel_host);
	int64_t wall_s = (int64_t)time(NULL);
	if (l->has_offset && start <= INT64_MAX)
		wall_s = ((int64_t)start + l->offset) / 1000000000;
	if (wall_s < 0)
		wall_s = 0;
	l->day = (uint16_t)(wall_s / 86400 > 65535 ? 65535 : wall_s / 86400);
}

/* ---- the loads table ---- */

static uint64_t version_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct ld_row {
	const char *state;
	uint32_t started, finished;
};

/* Our row of `loads` in state st. */
static int loads_row(struct ld *l, const struct ld_row *st)
{
	struct ld_tab *t = &l->tab[l->t_loads];
	struct fl_buf *b = &t->b;
	char login[256], me[512], lhost[256];
	const struct passwd *pw = getpwuid(geteuid());
	if (pw && pw->pw_name)
		snprintf(login, sizeof(login), "%s", pw->pw_name);
	else
		snprintf(login, sizeof(login), "uid %u", (unsigned)geteuid());
	if (l->o->loaded_by)
		snprintf(me, sizeof(me), "%s", l->o->loaded_by);
	else
		snprintf(me, sizeof(me), "%s (login %s)", fl_ch_user(l->ch), login);
	if (gethostname(lhost, sizeof(lhost)) < 0)
		lhost[0] = 0;
	lhost[sizeof(lhost) - 1] = 0;
	int rc = rb_strz(b, l->uuid) || fl_rb_u64(b, l->load_id) || fl_rb_u64(b, version_now()) ||
		 rb_strz(b, l->digest) || rb_strz(b, l->host) || rb_strz(b, l->trace) ||
		 rb_strz(b, st->state) || rb_u32(b, st->started) || rb_u32(b, st->finished) ||
		 rb_strz(b, me) || rb_strz(b, lhost);
	if (!rc)
		rc = l->has_offset ? fl_rb_notnull(b) || fl_rb_i64(b, l->offset) : fl_rb_null(b);
	/* the rows per data table, in fl_table order */
	uint8_t n = 0;
	for (uint32_t i = 0; i < l->ntab; i++)
		n += (int)i != l->t_loads;
	rc = rc || fl_rb_u8(b, n);
	for (uint32_t i = 0; i < l->ntab && !rc; i++)
		if ((int)i != l->t_loads)
			rc = fl_rb_u64(b, l->tab[i].rows);
	rc = rc || fl_rb_u8(b, n);
	for (uint32_t i = 0; i < l->ntab && !rc; i++)
		if ((int)i != l->t_loads)
			rc = rb_strz(b, l->tab[i].def->name);
	uint64_t events = 0;
	if (l->t_event >= 0)
		events = l->tab[l->t_event].rows;
	rc = rc || fl_rb_u64(b, events) || fl_rb_u64(b, l->lost);
	if (rc)
		return ld_fail(l, FL_ENOMEM, "out of memory");
	t->nbuf = 1;
	int sent = send_batch(l, t);
	t->rows = 0;
	return sent;
}

/* An earlier load of the trace: its id, state, digest and finish time. */
struct ld_prev {
	uint64_t load_id;
	char state[16], digest[40], finished[24];
};

/* The earlier loads of this trace (their latest state each). */
static int prev_loads(struct ld *l, struct ld_prev **out, uint32_t *n)
{
	char sql[1024];
	struct fl_buf b = {0};
	char e[512] = "";
	*out = NULL;
	*n = 0;
	/* argMax by version, not FINAL: the same on a Distributed table */
	snprintf(sql, sizeof(sql),
		 "SELECT load_id, argMax(state, version), argMax(digest, version), "
		 "toString(argMax(finished, version)) FROM `%s`.loads WHERE trace_uuid = '%s' "
		 "GROUP BY load_id ORDER BY load_id FORMAT TabSeparated",
		 l->o->target->database, l->uuid);
	int rc = fl_ch_exec(l->ch, sql, NULL, &b, e, sizeof(e));
	if (rc < 0) {
		fl_buf_free(&b);
		return ld_fail(l, rc, "reading %s.loads: %s", l->o->target->database, e);
	}
	const char *p = (const char *)b.p, *end = p + b.len;
	uint32_t cap = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		char line[256];
		size_t len = (size_t)(nl - p) < sizeof(line) - 1 ? (size_t)(nl - p)
								 : sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = 0;
		p = nl + 1;
		struct ld_prev v;
		memset(&v, 0, sizeof(v));
		if (sscanf(line, "%" SCNu64 "\t%15[^\t]\t%39[^\t]\t%23[^\t]", &v.load_id, v.state,
			   v.digest, v.finished) != 4)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct ld_prev *x = realloc(*out, cap * sizeof(*x));
			if (!x) {
				fl_buf_free(&b);
				return ld_fail(l, FL_ENOMEM, "out of memory");
			}
			*out = x;
		}
		(*out)[(*n)++] = v;
	}
	fl_buf_free(&b);
	return 0;
}

/*
 * The loads replaced by ours: their rows deleted from every data table
 * (on every shard), their `loads` rows set to 'replaced' (a new version,
 * the other columns as they were).
 */
static int replace_loads(struct ld *l, const uint64_t *ids, uint32_t n)
{
	const struct fl_target *tg = l->o->target;
	size_t cap = 64 + (size_t)n * 24;
	char *in = malloc(cap), head[256], *tail = malloc(cap + 256);
	if (!in || !tail) {
		free(in);
		free(tail);
		return ld_fail(l, FL_ENOMEM, "out of memory");
	}
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++)
		len += (size_t)snprintf(in + len, cap - len, "%s%" PRIu64, i ? ", " : "", ids[i]);
	snprintf(tail, cap + 256, "DELETE WHERE trace_uuid = '%s' AND load_id IN (%s)", l->uuid,
		 in);
	for (uint32_t i = 0; i < l->ntab && !l->rc; i++) {
		if ((int)i == l->t_loads)
			continue;
		char e[1024] = "";
		snprintf(head, sizeof(head), "ALTER TABLE `%s`.`%s%s`", tg->database,
			 l->tab[i].def->name, tg->cluster ? "_local" : "");
		int rc = fl_ddl(tg, head, tail, e, sizeof(e));
		if (rc < 0)
			ld_fail(l, rc, "removing the rows of the replaced load%s %s: %s",
				n == 1 ? "" : "s", in, e);
	}
	if (!l->rc) {
		struct fl_buf sql = {0};
		char e[512] = "";
		size_t need = 1024 + strlen(in);
		if (fl_buf_reserve(&sql, need) < 0) {
			ld_fail(l, FL_ENOMEM, "out of memory");
		} else {
			snprintf((char *)sql.p, need,
				 "INSERT INTO `%s`.loads SELECT trace_uuid, load_id, %" PRIu64
				 ", argMax(digest, version), argMax(host, version), "
				 "argMax(trace, version), 'replaced', argMax(started, version), "
				 "argMax(finished, version), argMax(loaded_by, version), "
				 "argMax(loader_host, version), argMax(clock_offset, version), "
				 "argMax(rows, version), argMax(tables, version), "
				 "argMax(events, version), argMax(lost, version) FROM `%s`.loads "
				 "WHERE trace_uuid = '%s' AND load_id IN (%s) "
				 "GROUP BY trace_uuid, load_id",
				 tg->database, version_now(), tg->database, l->uuid, in);
			int rc = fl_ch_exec(l->ch, (const char *)sql.p, cluster_settings(l), NULL,
					    e, sizeof(e));
			if (rc < 0)
				ld_fail(l, rc, "marking load%s %s replaced in %s.loads: %s",
					n == 1 ? "" : "s", in, tg->database, e);
		}
		fl_buf_free(&sql);
	}
	free(in);
	free(tail);
	return l->rc;
}

/* ---- a load ---- */

static struct ld_spec spec_of(const char *type)
{
	struct ld_spec sp = {V_STR, 0};
	if (strncmp(type, "Nullable(", 9) == 0) {
		sp.nullable = 1;
		type += 9;
	}
	if (strncmp(type, "Int64", 5) == 0)
		sp.v = V_I64;
	else if (strncmp(type, "UInt64", 6) == 0)
		sp.v = V_U64;
	else if (strncmp(type, "Float64", 7) == 0)
		sp.v = V_F64;
	return sp;
}

/* The fleet's tables, their INSERT statements, the leading columns. */
static int ld_setup(struct ld *l)
{
	const char *db = l->o->target->database;
	l->t_event = l->t_args = l->t_slice = l->t_loads = -1;
	for (uint32_t i = 0; i < fl_table_count() && i < LD_MAX_TABLES; i++) {
		struct ld_tab *t = &l->tab[l->ntab++];
		const struct fl_tabledef *d = fl_table(i);
		t->def = d;
		size_t cap = 128 + strlen(db) + strlen(d->name);
		for (uint32_t c = 0; c < d->ncols && c < 64; c++) {
			t->spec[c] = spec_of(d->cols[c].type);
			cap += strlen(d->cols[c].name) + 4;
		}
		if (!(t->insert = malloc(cap)))
			return ld_fail(l, FL_ENOMEM, "out of memory");
		/* the columns named: a table with more (a later version's) fills them */
		size_t n = (size_t)snprintf(t->insert, cap, "INSERT INTO `%s`.`%s` (", db, d->name);
		for (uint32_t c = 0; c < d->ncols; c++)
			n += (size_t)snprintf(t->insert + n, cap - n, "%s`%s`", c ? ", " : "",
					      d->cols[c].name);
		snprintf(t->insert + n, cap - n, ") FORMAT RowBinary");
		if (strcmp(d->name, "event") == 0)
			l->t_event = (int)i;
		else if (strcmp(d->name, "args") == 0)
			l->t_args = (int)i;
		else if (strcmp(d->name, "slice") == 0)
			l->t_slice = (int)i;
		else if (strcmp(d->name, "loads") == 0)
			l->t_loads = (int)i;
	}
	if (l->t_event < 0 || l->t_args < 0 || l->t_slice < 0 || l->t_loads < 0)
		return ld_fail(l, FL_EUSAGE, "the fleet's table list lacks a table");
	if (rb_strz(&l->pre, l->host) || rb_strz(&l->pre, l->uuid) ||
	    fl_rb_u64(&l->pre, l->load_id) || fl_rb_u16(&l->pre, l->day))
		return ld_fail(l, FL_ENOMEM, "out of memory");
	return 0;
}

static void ld_free(struct ld *l)
{
	for (uint32_t i = 0; i < l->ntab; i++) {
		fl_buf_free(&l->tab[i].b);
		free(l->tab[i].insert);
	}
	fl_buf_free(&l->pre);
	free(l->pend);
}

/* The load being read: the reader's damage callback has no argument of
 * ours (coll_open gives it none). */
static const char *loading_dir;

static void on_damage(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "ringtrace load: %s: %s\n", loading_dir ? loading_dir : "", msg);
}

/* What to do with the earlier loads: 1 skip (a complete one of this dump,
 * not --replace: said in err), else 0 and the loads to replace. */
static int plan(struct ld *l, const struct ld_prev *p, uint32_t n, uint64_t *ids, uint32_t *nids)
{
	*nids = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (strcmp(p[i].digest, l->digest) != 0 || strcmp(p[i].state, "replaced") == 0)
			continue;
		if (strcmp(p[i].state, "complete") == 0 && !l->o->replace) {
			snprintf(l->err, l->errsize,
				 "trace %s already loaded completely (load %" PRIu64
				 " at %s); --replace loads it again",
				 l->uuid, p[i].load_id, p[i].finished);
			return 1;
		}
		/* an incomplete load of this dump always; a complete one with --replace */
		ids[(*nids)++] = p[i].load_id;
	}
	return 0;
}

/* The trace imported, its rows sent, chunk by chunk. */
static int ld_import(struct ld *l, const struct coll *c, uint64_t *events)
{
	struct qy_store *s = qy_store_new();
	if (!s)
		return ld_fail(l, FL_ENOMEM, "out of memory");
	/* a chunk's records about a batch: one batch per chunk of a large table */
	struct qy_import_opts io = {
		.chunk_events = batch_rows(l),
		.chunk = on_chunk,
		.late_dur = on_late_dur,
		.arg = l,
		.on_error = on_damage,
	};
	struct qy_import_result r = {0, 0, 0};
	char e[512] = "";
	int rc = sender_start(l) < 0 ? 0 : qy_import(s, c, &io, &r, e, sizeof(e));
	/* the sender's error first: the import stopped for it */
	sender_stop(l);
	qy_store_free(s);
	*events = r.events;
	if (rc < 0 && !l->rc)
		ld_fail(l, FL_ETRACE, "importing the trace: %s", e);
	return l->rc;
}

int fl_load(const struct fl_load_opts *o, const char *dir, struct fl_load_result *r, char *err,
	    size_t errsize)
{
	struct ld *l = calloc(1, sizeof(*l));
	struct coll c;
	memset(r, 0, sizeof(*r));
	if (!l) {
		snprintf(err, errsize, "out of memory");
		return FL_ENOMEM;
	}
	l->o = o;
	l->ch = o->target->chs[0];
	l->dir = dir;
	l->err = err;
	l->errsize = errsize;
	err[0] = 0;
	double t0 = now_s();
	loading_dir = dir;
	if (coll_open(dir, "ringtrace load", on_damage, &c) < 0) {
		loading_dir = NULL;
		free(l);
		snprintf(err, errsize, "cannot read the trace (said above)");
		return FL_ETRACE;
	}
	/* the trace's name: DIR's last component */
	snprintf(l->trace, sizeof(l->trace), "%s", dir);
	size_t tl = strlen(l->trace);
	while (tl > 1 && l->trace[tl - 1] == '/')
		l->trace[--tl] = 0;
	const char *base = strrchr(l->trace, '/');
	if (base && base[1])
		memmove(l->trace, base + 1, strlen(base + 1) + 1);
	struct ld_prev *prev = NULL;
	uint32_t nprev = 0, nids = 0;
	uint64_t *ids = NULL, events = 0;
	if (identity(l, &c) == 0) {
		host_and_day(l, &c);
		if (getrandom(&l->load_id, sizeof(l->load_id), 0) != sizeof(l->load_id))
			ld_fail(l, FL_ENOMEM, "getrandom: %s", strerror(errno));
	}
	snprintf(r->trace_uuid, sizeof(r->trace_uuid), "%s", l->uuid);
	snprintf(r->host, sizeof(r->host), "%s", l->host);
	r->load_id = l->load_id;
	if (!l->rc && !ld_setup(l) && !prev_loads(l, &prev, &nprev) &&
	    !(ids = calloc(nprev ? nprev : 1, sizeof(*ids))))
		ld_fail(l, FL_ENOMEM, "out of memory");
	if (!l->rc && plan(l, prev, nprev, ids, &nids)) {
		r->skipped = 1;
		goto out;
	}
	struct ld_row row = {"started", (uint32_t)time(NULL), 0};
	int started = 0, complete = 0;
	if (!l->rc && !loads_row(l, &row)) {
		started = 1;
		if (!ld_import(l, &c, &events)) {
			row.state = "complete";
			row.finished = (uint32_t)time(NULL);
			if (!loads_row(l, &row)) {
				complete = 1;
				if (nids)
					replace_loads(l, ids, nids);
			}
		}
	}
	size_t n = strlen(err);
	if (l->rc && started && !complete)
		snprintf(err + n, errsize - n,
			 "; load %" PRIu64 " of trace %s is left incomplete ('started' in "
			 "%s.loads): the next load of the trace replaces it",
			 l->load_id, l->uuid, o->target->database);
	else if (l->rc && complete)
		snprintf(err + n, errsize - n,
			 " (load %" PRIu64 " of trace %s is complete, but the rows of the load "
			 "it replaces are still there: loading it again with --replace removes "
			 "them)",
			 l->load_id, l->uuid);
out:
	for (uint32_t i = 0; i < l->ntab; i++) {
		if ((int)i == l->t_loads)
			continue;
		if (i < 32)
			r->rows[i] = l->tab[i].rows;
		r->rows_total += l->tab[i].rows;
	}
	r->bytes = l->bytes;
	r->seconds = now_s() - t0;
	int rc = l->rc;
	coll_close(&c);
	loading_dir = NULL;
	free(prev);
	free(ids);
	ld_free(l);
	free(l);
	return rc;
}
