/*
 * The `args` table (query_api.h), computed: every field of every event,
 * read from the event tables when a statement reads it, never stored.
 *
 * A stored `args` held a row of 36 bytes per field of every event, the
 * same values the event tables hold: the largest table of the store, and
 * its memory (fresh pages, each a cost of its own) bounded the import. What
 * is kept instead, per event in id order: its event table (a source) and
 * its row there, 8 bytes; per source its fields' keys and value types; and
 * for enum fields the number and the name's string id of each row (the
 * event table holds the name, or the number as text when it has none, from
 * which the number cannot always be told back).
 *
 * The rows come in order of arg_set_id, then field order: the events'
 * ids ascend in the map (the import gives them in time order), so an
 * equality or a range on arg_set_id is a binary search on the id, not a
 * scan (a join from slice.arg_set_id is a lookup per slice), and ORDER
 * BY arg_set_id needs no sorter.
 *
 * Chunks (`--db FILE`): qy_table_clear on the event tables and on args
 * clears them together; args forgets its map, its ids start after the
 * last one cleared.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "query/query_internal.h"

#define QA_NONE UINT32_MAX /* an event without args rows (its fields unread) */

enum { QA_SET, QA_KEY, QA_INT, QA_STR, QA_REAL, QA_TYPE, QA_N };
static const struct qy_coldef qa_cols[QA_N] = {
	{"arg_set_id", QY_INT},    {"key", QY_TEXT},        {"int_value", QY_INT},
	{"string_value", QY_TEXT}, {"real_value", QY_REAL}, {"value_type", QY_TEXT},
};

struct qa_fld {
	uint32_t key, vtype; /* string ids */
	int32_t en;          /* its index among the source's enum fields, or -1 */
};

/* An event table whose rows' fields are args rows. */
struct qa_src {
	struct qy_table *t;
	uint32_t nf, nenum;
	struct qa_fld *f;
	/* enum fields, row * nenum + en: the number, the name (0: none) */
	int64_t *enum_num;
	uint32_t *enum_sid;
	uint64_t enum_rows;
};

struct qy_args {
	struct qy_store *s;
	struct qy_table *t;
	struct qa_src *src;
	uint32_t nsrc, srccap;
	/* per event, id first + i: its source (QA_NONE: no rows) and row */
	uint32_t *tab, *row;
	uint64_t n, cap;
	int64_t first;
};

/* ---- the store's side ---- */

static void qa_clear(struct qy_table *t)
{
	struct qy_args *a = t->user;
	a->first += (int64_t)a->n;
	a->n = 0;
}

static void qa_free(struct qy_table *t)
{
	struct qy_args *a = t->user;
	if (!a)
		return;
	for (uint32_t i = 0; i < a->nsrc; i++) {
		free(a->src[i].f);
		free(a->src[i].enum_num);
		free(a->src[i].enum_sid);
	}
	free(a->src);
	free(a->tab);
	free(a->row);
	free(a);
	t->user = NULL;
}

static uint64_t qa_bytes(const struct qy_table *t)
{
	const struct qy_args *a = t->user;
	uint64_t n = a->cap * 2 * sizeof(uint32_t);
	for (uint32_t i = 0; i < a->nsrc; i++)
		n += a->src[i].nf * sizeof(struct qa_fld) +
		     a->src[i].enum_rows * a->src[i].nenum * (sizeof(int64_t) + sizeof(uint32_t));
	return n;
}

static const sqlite3_module qa_module;

static const struct qy_table_ops qa_ops = {
	.module_name = "ringtrace_args",
	.module = &qa_module,
	.clear = qa_clear,
	.free = qa_free,
	.bytes = qa_bytes,
};

struct qy_args *qy_args_new(struct qy_store *s)
{
	struct qy_args *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	struct qy_table *t = qy_table_add(s, "args", qa_cols, QA_N);
	if (!t) {
		free(a);
		return NULL;
	}
	a->s = s;
	a->t = t;
	t->user = a;
	t->ops = &qa_ops;
	return a;
}

int64_t qy_args_source(struct qy_args *a, struct qy_table *t, uint32_t nf, const uint32_t *key,
		       const uint32_t *vtype, const uint8_t *is_enum)
{
	if (a->nsrc == QA_NONE - 1)
		return -1;
	if (a->nsrc == a->srccap) {
		uint32_t cap = a->srccap ? a->srccap * 2 : 64;
		struct qa_src *n = realloc(a->src, cap * sizeof(*n));
		if (!n)
			return -1;
		a->src = n;
		a->srccap = cap;
	}
	struct qa_src *src = &a->src[a->nsrc];
	memset(src, 0, sizeof(*src));
	if (!(src->f = calloc(nf ? nf : 1, sizeof(*src->f))))
		return -1;
	src->t = t;
	src->nf = nf;
	for (uint32_t k = 0; k < nf; k++) {
		src->f[k].key = key[k];
		src->f[k].vtype = vtype[k];
		src->f[k].en = is_enum[k] ? (int32_t)src->nenum++ : -1;
	}
	return a->nsrc++;
}

int qy_args_event(struct qy_args *a, int64_t id, int64_t src, uint64_t row)
{
	if (id < a->first + (int64_t)a->n || row > UINT32_MAX)
		return -1;
	/* ids not given (an event without a table) are events without rows */
	while (a->first + (int64_t)a->n <= id) {
		if (a->n == a->cap) {
			uint64_t cap = a->cap ? a->cap * 2 : 4096;
			uint32_t *tab = realloc(a->tab, cap * sizeof(*tab));
			if (tab)
				a->tab = tab;
			uint32_t *rw = tab ? realloc(a->row, cap * sizeof(*rw)) : NULL;
			if (!rw)
				return -1;
			a->row = rw;
			a->cap = cap;
		}
		a->tab[a->n] = QA_NONE;
		a->row[a->n++] = 0;
	}
	if (src < 0)
		return 0;
	a->tab[a->n - 1] = (uint32_t)src;
	a->row[a->n - 1] = (uint32_t)row;
	a->t->nrows += a->src[src].nf;
	return 0;
}

int qy_args_enum(struct qy_args *a, int64_t src, uint64_t row, uint32_t field, int64_t num,
		 uint32_t sid)
{
	struct qa_src *s = &a->src[src];
	int32_t en = s->f[field].en;
	if (en < 0)
		return -1;
	if (row >= s->enum_rows) {
		uint64_t rows = s->enum_rows ? s->enum_rows : 256;
		while (rows <= row)
			rows *= 2;
		int64_t *num2 = realloc(s->enum_num, rows * s->nenum * sizeof(*num2));
		if (num2)
			s->enum_num = num2;
		uint32_t *sid2 = num2 ? realloc(s->enum_sid, rows * s->nenum * sizeof(*sid2))
				      : NULL;
		if (!sid2)
			return -1;
		s->enum_sid = sid2;
		s->enum_rows = rows;
	}
	s->enum_num[row * s->nenum + (uint32_t)en] = num;
	s->enum_sid[row * s->nenum + (uint32_t)en] = sid;
	return 0;
}

/* ---- the rows without SQLite ---- */

int qy_args_iter_init(struct qy_args_iter *it, const struct qy_table *t)
{
	memset(it, 0, sizeof(*it));
	if (!t || t->ops != &qa_ops)
		return -1;
	it->t = t;
	return 0;
}

/* As qa_column gives them: an enum field its number and name, else the
 * event table's column as the value of its own type. */
int qy_args_iter_next(struct qy_args_iter *it, struct qy_args_row *r)
{
	const struct qy_args *a = it->t->user;
	for (; it->i < a->n; it->i++, it->k = 0) {
		uint32_t s = a->tab[it->i];
		if (s == QA_NONE || it->k >= a->src[s].nf)
			continue;
		const struct qa_src *src = &a->src[s];
		const struct qa_fld *f = &src->f[it->k];
		uint64_t row = a->row[it->i];
		const struct qy_col *tc = &src->t->cols[4 + it->k]; /* after id, ts, utid, cpu */
		r->arg_set_id = a->first + (int64_t)it->i;
		r->key = f->key;
		r->value_type = f->vtype;
		r->int_value = QY_NULL_INT;
		r->int_null = 1;
		r->real_value = NAN;
		r->string_value = 0;
		if (f->en >= 0) {
			if (row < src->enum_rows) {
				uint64_t at = row * src->nenum + (uint32_t)f->en;
				r->int_value = src->enum_num[at];
				r->int_null = 0;
				r->string_value = src->enum_sid[at];
			}
		} else if (tc->type == QY_INT) {
			r->int_value = ((const int64_t *)tc->v)[row];
			r->int_null = qy_int_null(tc, row, r->int_value);
		} else if (tc->type == QY_REAL) {
			r->real_value = ((const double *)tc->v)[row];
		} else if (tc->type == QY_TEXT) {
			r->string_value = ((const uint32_t *)tc->v)[row];
		}
		it->k++;
		return 1;
	}
	return 0;
}

/* ---- the virtual table ---- */

struct qa_vtab {
	sqlite3_vtab base;
	struct qy_args *a;
};

struct qa_cursor {
	sqlite3_vtab_cursor base;
	struct qy_args *a;
	uint64_t i, end; /* the event walked (map index), the end of the range */
	uint32_t k;      /* its field */
	const struct qa_src *src;
};

#define QA_EQ 0x1
#define QA_LO 0x2
#define QA_HI 0x4
#define QA_LO_GT 0x8  /* the lower bound strict (>) */
#define QA_HI_LT 0x10 /* the upper bound strict (<) */

static int qa_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
		      char **perr)
{
	struct qy_store *s = aux;
	char *end = NULL;
	unsigned long i = argc == 4 ? strtoul(argv[3], &end, 10) : 0;
	struct qy_table *t = end && end != argv[3] && !*end ? qy_table_at(s, (uint32_t)i) : NULL;
	if (argc != 4 || strcmp(argv[1], "temp") != 0 || !t || t->ops != &qa_ops) {
		*perr = sqlite3_mprintf("a ringtrace_args table is made by ringtrace, in temp");
		return SQLITE_ERROR;
	}
	int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(\"arg_set_id\" INTEGER, \"key\" TEXT, "
					  "\"int_value\" INTEGER, \"string_value\" TEXT, "
					  "\"real_value\" REAL, \"value_type\" TEXT)");
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
	struct qa_vtab *vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->a = t->user;
	*out = &vt->base;
	return SQLITE_OK;
}

static int qa_disconnect(sqlite3_vtab *base)
{
	sqlite3_free(base);
	return SQLITE_OK;
}

/*
 * Plans: an equality on arg_set_id (one event's rows: a binary search,
 * then its fields), a range on it (a binary search, then the events in
 * range), else the whole walk. Costed in rows touched, as the stored
 * tables' plans are (vtab.c).
 */
static int qa_best_index(sqlite3_vtab *base, sqlite3_index_info *info)
{
	const struct qy_args *a = ((struct qa_vtab *)base)->a;
	double nev = a->n ? (double)a->n : 1, rows = a->t->nrows ? (double)a->t->nrows : 1;
	double per = rows / nev, lg = log2(nev) + 1;
	int eq = -1, lo = -1, hi = -1;
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		if (!c->usable || c->iColumn != QA_SET)
			continue;
		if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && eq < 0)
			eq = i;
		else if ((c->op == SQLITE_INDEX_CONSTRAINT_GT ||
			  c->op == SQLITE_INDEX_CONSTRAINT_GE) &&
			 lo < 0)
			lo = i;
		else if ((c->op == SQLITE_INDEX_CONSTRAINT_LT ||
			  c->op == SQLITE_INDEX_CONSTRAINT_LE) &&
			 hi < 0)
			hi = i;
	}
	int plan = 0, argv = 1;
	double est = rows, cost = rows;
	if (eq >= 0) {
		plan = QA_EQ;
		lo = hi = -1;
		est = per;
		cost = lg + per;
	} else if (lo >= 0 || hi >= 0) {
		/* the events in range, from the bounds when known, else a quarter each */
		int64_t x = a->first, y = a->first + (int64_t)a->n - 1;
		double frac = 1;
		const int cons[2] = {lo, hi};
		for (int j = 0; j < 2; j++) {
			sqlite3_value *v = NULL;
			if (cons[j] < 0)
				continue;
			sqlite3_value *d = NULL;
			if (sqlite3_vtab_rhs_value(info, cons[j], &v) == SQLITE_OK && v &&
			    (d = sqlite3_value_dup(v)) != NULL) {
				if (!qy_bound(d, info->aConstraint[cons[j]].op, &x, &y))
					frac = 0;
				sqlite3_value_free(d);
			} else {
				frac *= 0.25;
			}
		}
		if (frac > 0 && x <= y)
			frac *= ((double)y - (double)x + 1) / nev;
		est = rows * (frac < 1 ? frac : 1);
		cost = lg + est;
		plan = (lo >= 0 ? QA_LO : 0) | (hi >= 0 ? QA_HI : 0);
		if (lo >= 0 && info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GT)
			plan |= QA_LO_GT;
		if (hi >= 0 && info->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LT)
			plan |= QA_HI_LT;
	}
	const int used[3] = {eq, lo, hi};
	for (int j = 0; j < 3; j++) {
		if (used[j] < 0)
			continue;
		info->aConstraintUsage[used[j]].argvIndex = argv++;
		info->aConstraintUsage[used[j]].omit = 1;
	}
	if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == QA_SET && !info->aOrderBy[0].desc)
		info->orderByConsumed = 1;
	info->idxNum = plan;
	info->estimatedRows = (sqlite3_int64)(est < 1 ? 1 : est);
	info->estimatedCost = cost < 1 ? 1 : cost;
	return SQLITE_OK;
}

static int qa_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
	struct qa_cursor *c = sqlite3_malloc(sizeof(*c));
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->a = ((struct qa_vtab *)base)->a;
	*out = &c->base;
	return SQLITE_OK;
}

static int qa_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* From event i on (field k of it), the first with a row: there, or at end. */
static void qa_settle(struct qa_cursor *c)
{
	const struct qy_args *a = c->a;
	for (; c->i < c->end; c->i++, c->k = 0) {
		uint32_t s = a->tab[c->i];
		if (s != QA_NONE && c->k < a->src[s].nf) {
			c->src = &a->src[s];
			return;
		}
	}
}

static int qa_filter(sqlite3_vtab_cursor *cur, int plan, const char *idx, int argc,
		     sqlite3_value **argv)
{
	struct qa_cursor *c = (struct qa_cursor *)cur;
	const struct qy_args *a = c->a;
	int64_t x = a->first, y = a->first + (int64_t)a->n - 1;
	int k = 0, some = a->n > 0;
	(void)idx;
	if ((plan & QA_EQ) && k < argc)
		some &= qy_bound(argv[k++], SQLITE_INDEX_CONSTRAINT_EQ, &x, &y);
	if ((plan & QA_LO) && k < argc)
		some &= qy_bound(argv[k++],
				 plan & QA_LO_GT ? SQLITE_INDEX_CONSTRAINT_GT
						 : SQLITE_INDEX_CONSTRAINT_GE,
				 &x, &y);
	if ((plan & QA_HI) && k < argc)
		some &= qy_bound(argv[k++],
				 plan & QA_HI_LT ? SQLITE_INDEX_CONSTRAINT_LT
						 : SQLITE_INDEX_CONSTRAINT_LE,
				 &x, &y);
	c->i = c->end = 0;
	c->k = 0;
	if (some && x <= y) {
		c->i = (uint64_t)(x - a->first);
		c->end = (uint64_t)(y - a->first) + 1;
	}
	qa_settle(c);
	return SQLITE_OK;
}

static int qa_next(sqlite3_vtab_cursor *cur)
{
	struct qa_cursor *c = (struct qa_cursor *)cur;
	c->k++;
	qa_settle(c);
	return SQLITE_OK;
}

static int qa_eof(sqlite3_vtab_cursor *cur)
{
	const struct qa_cursor *c = (const struct qa_cursor *)cur;
	return c->i >= c->end;
}

static void qa_text(sqlite3_context *ctx, const struct qy_store *s, uint32_t id)
{
	size_t len;
	const char *p = id ? qy_str_get(s, id, &len) : NULL;
	/* the store's strings never move: no copy */
	if (p)
		sqlite3_result_text64(ctx, p, len, SQLITE_STATIC, SQLITE_UTF8);
}

static int qa_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct qa_cursor *c = (const struct qa_cursor *)cur;
	const struct qy_args *a = c->a;
	const struct qa_src *src = c->src;
	const struct qa_fld *f = &src->f[c->k];
	uint64_t row = a->row[c->i];
	const struct qy_col *tc = &src->t->cols[4 + c->k]; /* after id, ts, utid, cpu */
	if (col == QA_SET) {
		sqlite3_result_int64(ctx, a->first + (int64_t)c->i);
	} else if (col == QA_KEY) {
		qa_text(ctx, a->s, f->key);
	} else if (col == QA_TYPE) {
		qa_text(ctx, a->s, f->vtype);
	} else if (f->en >= 0) {
		uint64_t at = row * src->nenum + (uint32_t)f->en;
		if (col == QA_INT && row < src->enum_rows)
			sqlite3_result_int64(ctx, src->enum_num[at]);
		else if (col == QA_STR && row < src->enum_rows)
			qa_text(ctx, a->s, src->enum_sid[at]);
	} else if (col == QA_INT && tc->type == QY_INT) {
		int64_t v = ((const int64_t *)tc->v)[row];
		if (!qy_int_null(tc, row, v))
			sqlite3_result_int64(ctx, v);
	} else if (col == QA_REAL && tc->type == QY_REAL) {
		double v = ((const double *)tc->v)[row];
		if (!isnan(v))
			sqlite3_result_double(ctx, v);
	} else if (col == QA_STR && tc->type == QY_TEXT) {
		qa_text(ctx, a->s, ((const uint32_t *)tc->v)[row]);
	}
	return SQLITE_OK;
}

static int qa_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *out)
{
	const struct qa_cursor *c = (const struct qa_cursor *)cur;
	/* unique: an event has at most 64 fields */
	*out = (sqlite_int64)(((uint64_t)(c->a->first + (int64_t)c->i) << 6) | c->k);
	return SQLITE_OK;
}

static const sqlite3_module qa_module = {
	.iVersion = 1,
	.xCreate = qa_connect,
	.xConnect = qa_connect,
	.xBestIndex = qa_best_index,
	.xDisconnect = qa_disconnect,
	.xDestroy = qa_disconnect,
	.xOpen = qa_open,
	.xClose = qa_close,
	.xFilter = qa_filter,
	.xNext = qa_next,
	.xEof = qa_eof,
	.xColumn = qa_column,
	.xRowid = qa_rowid,
};
