/*
 * pairs(from, to, key, stop_key, by): the pairs of a start and a stop
 * event (query_api.h) as an eponymous table-valued function of SQLite,
 * computed from the store's columns in one pass.
 *
 * Why C and not SQL: the same rule in window functions sorts every event
 * twice inside SQLite (a few hundred thousand events a second); here the
 * events of each table are already in time order, so a merge of the
 * tables by (ts, id) and a map from key to a stack of open starts pair
 * them at memory speed.
 *
 * The events' tables and columns are found through event_table and
 * event_column (pair.c's lookup, names bound), then read from the store
 * by name: the arguments are values, never SQL text.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/pair.h"
#include "query/query_api.h"
#include "ringtrace/error.h"

enum {
	PV_ID,
	PV_TS,
	PV_UTID,
	PV_DUR,
	PV_STOP_ID,
	PV_STOP_TS,
	PV_STOP_UTID,
	PV_KEY,
	PV_GRP,
	PV_ARG0, /* the hidden columns: the arguments */
	PV_NARGS = 5,
};
enum { PA_FROM, PA_TO, PA_KEY, PA_STOP_KEY, PA_BY };

/* An event reference: its source (table of one side) and row. */
#define PV_ROW_BITS 40
#define PV_ROW_MASK ((UINT64_C(1) << PV_ROW_BITS) - 1)
/* nx[] of a stop: paired (the start's row says with what), or not */
#define PV_PAIRED (-2)
#define PV_ALONE (-1)

/* A table of one side, and its columns' indexes (-1: none). */
struct qy_pv_src {
	struct qy_table *t;
	int id, ts, utid, key, by;
	int start;
	uint32_t *perm; /* rows in (ts, id) order, when they are not already */
	uint64_t next;  /* the merge's position in it */
};

struct qy_pv_vtab {
	sqlite3_vtab base;
	sqlite3 *db;
	struct qy_store *s;
};

struct qy_pv_cursor {
	sqlite3_vtab_cursor base;
	struct qy_store *s;
	struct qy_pv_src src[2 * QY_PAIR_MAX_TABLES];
	uint32_t nsrc;
	sqlite3_value *args[PV_NARGS];
	uint64_t *ev; /* the events in (ts, id) order */
	int64_t *nx;  /* a start: its stop's position, or PV_ALONE; a stop: PV_PAIRED, PV_ALONE */
	uint64_t n, pos;
};

/* A key as SQL's PARTITION BY tells keys apart: NULL; a number (a real
 * that is an integer is that integer); another real; a text (the store
 * interns strings: the same bytes, the same id). */
struct qy_pv_key {
	uint64_t v;
	uint8_t cls; /* 0 NULL, 1 integer, 2 real, 3 text */
};

struct qy_pv_slot {
	struct qy_pv_key k;
	uint8_t used;
	int64_t top; /* the most recent open start's position, or -1 */
};

struct qy_pv_map {
	struct qy_pv_slot *v;
	uint64_t n, cap; /* cap: a power of two */
};

static struct qy_pv_key qy_pv_key_of(const struct qy_table *t, int c, uint64_t row)
{
	struct qy_pv_key k = {0, 0};
	const struct qy_col *col = &t->cols[c];
	if (col->type == QY_INT) {
		int64_t x = ((const int64_t *)col->v)[row];
		if (!qy_int_null(col, row, x))
			k = (struct qy_pv_key){(uint64_t)x, 1};
	} else if (col->type == QY_REAL) {
		double x = ((const double *)col->v)[row];
		if (isnan(x))
			return k;
		if (x >= -9223372036854775808.0 && x < 9223372036854775808.0 &&
		    (double)(int64_t)x == x)
			return (struct qy_pv_key){(uint64_t)(int64_t)x, 1};
		memcpy(&k.v, &x, sizeof(x));
		k.cls = 2;
	} else if (col->type == QY_TEXT) {
		uint32_t x = ((const uint32_t *)col->v)[row];
		if (x)
			k = (struct qy_pv_key){x, 3};
	}
	return k;
}

static uint64_t qy_pv_hash(struct qy_pv_key k)
{
	uint64_t h = (k.v ^ ((uint64_t)k.cls << 56)) * UINT64_C(0x9e3779b97f4a7c15);
	return h ^ (h >> 29);
}

static int qy_pv_grow(struct qy_pv_map *m)
{
	uint64_t cap = m->cap ? m->cap * 2 : 1024;
	struct qy_pv_slot *v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	for (uint64_t i = 0; i < m->cap; i++) {
		if (!m->v[i].used)
			continue;
		uint64_t j = qy_pv_hash(m->v[i].k) & (cap - 1);
		while (v[j].used)
			j = (j + 1) & (cap - 1);
		v[j] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

/* The slot of key k, made empty (no start open) at first sight; NULL out of memory. */
static struct qy_pv_slot *qy_pv_slot(struct qy_pv_map *m, struct qy_pv_key k)
{
	if (m->n * 2 >= m->cap && qy_pv_grow(m) < 0)
		return NULL;
	uint64_t j = qy_pv_hash(k) & (m->cap - 1);
	for (; m->v[j].used; j = (j + 1) & (m->cap - 1))
		if (m->v[j].k.cls == k.cls && m->v[j].k.v == k.v)
			return &m->v[j];
	m->n++;
	m->v[j] = (struct qy_pv_slot){.k = k, .used = 1, .top = -1};
	return &m->v[j];
}

/* ---- the events in (ts, id) order ---- */

static int64_t qy_pv_i64(const struct qy_table *t, int c, uint64_t row)
{
	return ((const int64_t *)t->cols[c].v)[row];
}

/* Whether row a of x goes before row b of y: (ts, id), as SQL orders
 * them (NULL, the smallest int64, first). */
static int qy_pv_before(const struct qy_pv_src *x, uint64_t a, const struct qy_pv_src *y,
			uint64_t b)
{
	int64_t ta = qy_pv_i64(x->t, x->ts, a), tb = qy_pv_i64(y->t, y->ts, b);
	if (ta != tb)
		return ta < tb;
	return qy_pv_i64(x->t, x->id, a) < qy_pv_i64(y->t, y->id, b);
}

static int qy_pv_cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct qy_pv_src *x = arg;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	return qy_pv_before(x, a, x, b) ? -1 : qy_pv_before(x, b, x, a) ? 1 : 0;
}

/* The table's rows in (ts, id) order: as they are (the import writes them
 * in time order), or sorted. 0, or -1 out of memory. */
static int qy_pv_order(struct qy_pv_src *x)
{
	uint64_t n = x->t->nrows;
	uint64_t i = 1;
	while (i < n && !qy_pv_before(x, i, x, i - 1))
		i++;
	if (i >= n)
		return 0;
	if (n > UINT32_MAX || !(x->perm = malloc(n * sizeof(*x->perm))))
		return -1;
	for (i = 0; i < n; i++)
		x->perm[i] = (uint32_t)i;
	qsort_r(x->perm, n, sizeof(*x->perm), qy_pv_cmp_rows, x);
	return 0;
}

static uint64_t qy_pv_row_at(const struct qy_pv_src *x, uint64_t i)
{
	return x->perm ? x->perm[i] : i;
}

/* The events of every table merged by (ts, id) into c->ev. */
static void qy_pv_merge(struct qy_pv_cursor *c)
{
	for (uint64_t p = 0; p < c->n; p++) {
		uint32_t best = UINT32_MAX;
		for (uint32_t i = 0; i < c->nsrc; i++) {
			const struct qy_pv_src *x = &c->src[i];
			if (x->next == x->t->nrows)
				continue;
			if (best == UINT32_MAX ||
			    qy_pv_before(x, qy_pv_row_at(x, x->next), &c->src[best],
					 qy_pv_row_at(&c->src[best], c->src[best].next)))
				best = i;
		}
		struct qy_pv_src *b = &c->src[best];
		c->ev[p] = (uint64_t)best << PV_ROW_BITS | qy_pv_row_at(b, b->next++);
	}
}

/*
 * The pairing, in one pass: per key a stack of open starts, linked
 * through nx (an open start's nx is the start below it); a stop pops the
 * top. What is left open at the end is unpaired. 0, or -1 out of memory.
 */
static int qy_pv_pair(struct qy_pv_cursor *c)
{
	struct qy_pv_map m = {0};
	for (uint64_t p = 0; p < c->n; p++) {
		const struct qy_pv_src *x = &c->src[c->ev[p] >> PV_ROW_BITS];
		struct qy_pv_slot *sl = qy_pv_slot(
			&m, qy_pv_key_of(x->t, x->key, c->ev[p] & PV_ROW_MASK));
		if (!sl) {
			free(m.v);
			return -1;
		}
		if (x->start) {
			c->nx[p] = sl->top;
			sl->top = (int64_t)p;
		} else if (sl->top >= 0) {
			int64_t s = sl->top;
			sl->top = c->nx[s];
			c->nx[s] = (int64_t)p;
			c->nx[p] = PV_PAIRED;
		} else {
			c->nx[p] = PV_ALONE;
		}
	}
	for (uint64_t i = 0; i < m.cap; i++)
		for (int64_t s = m.v[i].used ? m.v[i].top : -1; s >= 0;) {
			int64_t below = c->nx[s];
			c->nx[s] = PV_ALONE;
			s = below;
		}
	free(m.v);
	return 0;
}

/* ---- the virtual table ---- */

static int qy_pv_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
			 sqlite3_vtab **out, char **perr)
{
	(void)argc;
	(void)argv;
	int rc = sqlite3_declare_vtab(
		db, "CREATE TABLE x(id INTEGER, ts INTEGER, utid INTEGER, dur INTEGER, "
		    "stop_id INTEGER, stop_ts INTEGER, stop_utid INTEGER, key, grp, "
		    "from_event HIDDEN, to_event HIDDEN, key_field HIDDEN, "
		    "stop_key_field HIDDEN, by_field HIDDEN)");
	if (rc != SQLITE_OK) {
		*perr = sqlite3_mprintf("pairs: %s", sqlite3_errmsg(db));
		return rc;
	}
	/* it reads memory of our own and the catalogue: safe from views */
	sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
	struct qy_pv_vtab *vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->db = db;
	vt->s = aux;
	*out = &vt->base;
	return SQLITE_OK;
}

static int qy_pv_disconnect(sqlite3_vtab *base)
{
	sqlite3_free(base);
	return SQLITE_OK;
}

/* The arguments: equality on the hidden columns, passed in column order;
 * idxNum the set of them given. from and to are needed. */
static int qy_pv_best_index(sqlite3_vtab *base, sqlite3_index_info *info)
{
	int which[PV_NARGS];
	for (int a = 0; a < PV_NARGS; a++)
		which[a] = -1;
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *k = &info->aConstraint[i];
		int a = k->iColumn - PV_ARG0;
		if (a < 0 || a >= PV_NARGS || k->op != SQLITE_INDEX_CONSTRAINT_EQ)
			continue;
		if (!k->usable)
			return SQLITE_CONSTRAINT;
		if (which[a] < 0)
			which[a] = i;
	}
	if (which[PA_FROM] < 0 || which[PA_TO] < 0) {
		sqlite3_free(base->zErrMsg);
		base->zErrMsg = sqlite3_mprintf(
			"pairs(from, to[, key[, stop_key[, by]]]) needs its start and stop events");
		return SQLITE_ERROR;
	}
	int n = 0;
	info->idxNum = 0;
	for (int a = 0; a < PV_NARGS; a++) {
		if (which[a] < 0)
			continue;
		info->aConstraintUsage[which[a]].argvIndex = ++n;
		info->aConstraintUsage[which[a]].omit = 1;
		info->idxNum |= 1 << a;
	}
	info->estimatedCost = 1e6;
	info->estimatedRows = 1000000;
	return SQLITE_OK;
}

static int qy_pv_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
	struct qy_pv_cursor *c = sqlite3_malloc(sizeof(*c));
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->s = ((struct qy_pv_vtab *)base)->s;
	*out = &c->base;
	return SQLITE_OK;
}

static void qy_pv_reset(struct qy_pv_cursor *c)
{
	for (uint32_t i = 0; i < c->nsrc; i++)
		free(c->src[i].perm);
	for (int a = 0; a < PV_NARGS; a++) {
		sqlite3_value_free(c->args[a]);
		c->args[a] = NULL;
	}
	free(c->ev);
	free(c->nx);
	c->ev = NULL;
	c->nx = NULL;
	c->nsrc = 0;
	c->n = c->pos = 0;
}

static int qy_pv_close(sqlite3_vtab_cursor *cur)
{
	qy_pv_reset((struct qy_pv_cursor *)cur);
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* The tables of one side as sources of the cursor. 0, or an error in err. */
static int qy_pv_sources(struct qy_pv_cursor *c, const struct qy_pair_side *sd, int start,
			 char *err, size_t errsize)
{
	for (uint32_t i = 0; i < sd->n; i++) {
		struct qy_pv_src *x = &c->src[c->nsrc];
		*x = (struct qy_pv_src){.t = qy_table_find(c->s, sd->names[i]), .start = start};
		if (!x->t) {
			snprintf(err, errsize, "pairs: table %s is not the trace's", sd->names[i]);
			return -RINGTRACE_ENOENT;
		}
		x->id = qy_col_find(x->t, "id");
		x->ts = qy_col_find(x->t, "ts");
		x->utid = qy_col_find(x->t, "utid");
		x->key = qy_col_find(x->t, sd->key[i]);
		x->by = sd->by[i][0] ? qy_col_find(x->t, sd->by[i]) : -1;
		if (x->id < 0 || x->ts < 0 || x->utid < 0 || x->key < 0 ||
		    (sd->by[i][0] && x->by < 0) || x->t->cols[x->id].type != QY_INT ||
		    x->t->cols[x->ts].type != QY_INT || x->t->cols[x->utid].type != QY_INT ||
		    x->t->nrows > PV_ROW_MASK) {
			snprintf(err, errsize,
				 "pairs: table %s is not an event's table as expected",
				 sd->names[i]);
			return -RINGTRACE_EINVAL;
		}
		c->nsrc++;
		c->n += x->t->nrows;
		if (qy_pv_order(x) < 0)
			return -RINGTRACE_ENOMEM;
	}
	return 0;
}

/* An argument as text: NULL when NULL or empty (a key or group field). */
static const char *qy_pv_arg(struct qy_pv_cursor *c, int a)
{
	const char *v = c->args[a] ? (const char *)sqlite3_value_text(c->args[a]) : NULL;
	return v && *v ? v : NULL;
}

/* Look the events up and pair them. 0, or an error in err. */
static int qy_pv_run(struct qy_pv_cursor *c, sqlite3 *db, char *err, size_t errsize)
{
	const char *from = qy_pv_arg(c, PA_FROM), *to = qy_pv_arg(c, PA_TO);
	const char *key = qy_pv_arg(c, PA_KEY), *stop_key = qy_pv_arg(c, PA_STOP_KEY);
	if (!from || !to) {
		snprintf(err, errsize, "pairs: the start and the stop events are needed");
		return -RINGTRACE_EINVAL;
	}
	if (strcmp(from, to) == 0) {
		snprintf(err, errsize, "pairs: the start and the stop are the same event '%s'",
			 from);
		return -RINGTRACE_EINVAL;
	}
	if (stop_key && !key) {
		snprintf(err, errsize, "pairs: a stop key field needs a key field (the start's)");
		return -RINGTRACE_EINVAL;
	}
	struct qy_pair_side *sd = malloc(sizeof(*sd));
	if (!sd)
		return -RINGTRACE_ENOMEM;
	int rc = qy_pair_side(db, from, key, qy_pv_arg(c, PA_BY), "the start", sd, err, errsize);
	if (rc == 0)
		rc = qy_pv_sources(c, sd, 1, err, errsize);
	if (rc == 0)
		rc = qy_pair_side(db, to, stop_key ? stop_key : key, NULL, "the stop", sd, err,
				  errsize);
	if (rc == 0)
		rc = qy_pv_sources(c, sd, 0, err, errsize);
	free(sd);
	if (rc < 0)
		return rc;
	if (!c->n)
		return 0;
	c->ev = malloc(c->n * sizeof(*c->ev));
	c->nx = malloc(c->n * sizeof(*c->nx));
	if (!c->ev || !c->nx)
		return -RINGTRACE_ENOMEM;
	qy_pv_merge(c);
	return qy_pv_pair(c) < 0 ? -RINGTRACE_ENOMEM : 0;
}

/* Past the stops that were paired: their row is their start's. */
static void qy_pv_skip(struct qy_pv_cursor *c)
{
	while (c->pos < c->n && c->nx[c->pos] == PV_PAIRED)
		c->pos++;
}

static int qy_pv_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxs, int argc,
			sqlite3_value **argv)
{
	(void)idxs;
	struct qy_pv_cursor *c = (struct qy_pv_cursor *)cur;
	struct qy_pv_vtab *vt = (struct qy_pv_vtab *)cur->pVtab;
	qy_pv_reset(c);
	int k = 0;
	for (int a = 0; a < PV_NARGS; a++)
		if (idx & (1 << a) && k < argc && !(c->args[a] = sqlite3_value_dup(argv[k++])))
			return SQLITE_NOMEM;
	char err[1024] = "out of memory";
	int rc = qy_pv_run(c, vt->db, err, sizeof(err));
	if (rc == -RINGTRACE_ENOMEM)
		return SQLITE_NOMEM;
	if (rc < 0) {
		sqlite3_free(vt->base.zErrMsg);
		vt->base.zErrMsg = sqlite3_mprintf("%s", err);
		return SQLITE_ERROR;
	}
	qy_pv_skip(c);
	return SQLITE_OK;
}

static int qy_pv_next(sqlite3_vtab_cursor *cur)
{
	struct qy_pv_cursor *c = (struct qy_pv_cursor *)cur;
	c->pos++;
	qy_pv_skip(c);
	return SQLITE_OK;
}

static int qy_pv_eof(sqlite3_vtab_cursor *cur)
{
	struct qy_pv_cursor *c = (struct qy_pv_cursor *)cur;
	return c->pos >= c->n;
}

/* Column col of event position p as the result (NULL: left without one). */
static void qy_pv_value(const struct qy_pv_cursor *c, sqlite3_context *ctx, uint64_t p, int col)
{
	const struct qy_pv_src *x = &c->src[c->ev[p] >> PV_ROW_BITS];
	uint64_t row = c->ev[p] & PV_ROW_MASK;
	int ci = col == PV_ID     ? x->id
		 : col == PV_TS   ? x->ts
		 : col == PV_UTID ? x->utid
		 : col == PV_KEY  ? x->key
				  : x->by;
	if (ci < 0)
		return;
	const struct qy_col *cd = &x->t->cols[ci];
	if (cd->type == QY_INT) {
		int64_t v = ((const int64_t *)cd->v)[row];
		if (!qy_int_null(cd, row, v))
			sqlite3_result_int64(ctx, v);
	} else if (cd->type == QY_REAL) {
		double v = ((const double *)cd->v)[row];
		if (!isnan(v))
			sqlite3_result_double(ctx, v);
	} else if (cd->type == QY_TEXT) {
		size_t len;
		const char *s = qy_str_get(c->s, ((const uint32_t *)cd->v)[row], &len);
		/* the store's strings never move: no copy */
		if (s)
			sqlite3_result_text64(ctx, s, len, SQLITE_STATIC, SQLITE_UTF8);
	}
}

static int qy_pv_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i)
{
	struct qy_pv_cursor *c = (struct qy_pv_cursor *)cur;
	uint64_t p = c->pos;
	int start = c->src[c->ev[p] >> PV_ROW_BITS].start;
	int64_t stop = start ? c->nx[p] : (int64_t)p;
	if (i >= PV_ARG0) {
		if (c->args[i - PV_ARG0])
			sqlite3_result_value(ctx, c->args[i - PV_ARG0]);
	} else if (i == PV_ID || i == PV_TS || i == PV_UTID || i == PV_GRP) {
		if (start)
			qy_pv_value(c, ctx, p, i);
	} else if (i == PV_KEY) {
		qy_pv_value(c, ctx, p, i);
	} else if (stop >= 0 && i == PV_DUR) {
		if (start) {
			const struct qy_pv_src *x = &c->src[c->ev[p] >> PV_ROW_BITS];
			const struct qy_pv_src *y = &c->src[c->ev[stop] >> PV_ROW_BITS];
			int64_t t0 = qy_pv_i64(x->t, x->ts, c->ev[p] & PV_ROW_MASK);
			int64_t t1 = qy_pv_i64(y->t, y->ts, c->ev[stop] & PV_ROW_MASK);
			if (t0 != QY_NULL_INT && t1 != QY_NULL_INT)
				sqlite3_result_int64(ctx, t1 - t0);
		}
	} else if (stop >= 0) {
		qy_pv_value(c, ctx, (uint64_t)stop, i - PV_STOP_ID);
	}
	return SQLITE_OK;
}

static int qy_pv_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *out)
{
	*out = (sqlite_int64)((struct qy_pv_cursor *)cur)->pos;
	return SQLITE_OK;
}

static const sqlite3_module qy_pv_module = {
	.iVersion = 1,
	.xCreate = NULL, /* eponymous only: pairs(...), never CREATE VIRTUAL TABLE */
	.xConnect = qy_pv_connect,
	.xBestIndex = qy_pv_best_index,
	.xDisconnect = qy_pv_disconnect,
	.xDestroy = qy_pv_disconnect,
	.xOpen = qy_pv_open,
	.xClose = qy_pv_close,
	.xFilter = qy_pv_filter,
	.xNext = qy_pv_next,
	.xEof = qy_pv_eof,
	.xColumn = qy_pv_column,
	.xRowid = qy_pv_rowid,
};

int qy_pairs_register(sqlite3 *db, struct qy_store *s)
{
	return sqlite3_create_module_v2(db, "pairs", &qy_pv_module, s, NULL);
}
