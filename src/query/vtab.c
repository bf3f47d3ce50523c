/*
 * The store's tables as SQLite virtual tables (module "ringtrace",
 * query_api.h).
 *
 * A cursor is a range [lo, hi) of positions in one order of the table's
 * rows: the natural order (position = row), or the ascending order of an
 * INT column (its permutation index, qy_col.perm: position -> row). The
 * plan (xBestIndex) narrows the range by binary search instead of letting
 * SQLite filter a full scan:
 *
 *   - a range or equality on a column whose values ascend in the natural
 *     order (qy_col.sorted, found by one pass on first use), or on the
 *     rowid: binary search on the column itself;
 *   - an equality or range on any other INT column: binary search in its
 *     permutation index, made the first time a plan that pays for it
 *     runs (a stable sort, so rows of equal value stay in natural order)
 *     and kept until the rows change;
 *   - within the rows of one value of that index, a range on a sorted
 *     column too (they ascend there as they do in the whole table):
 *     `slice WHERE utid = ? AND ts < ?` is two binary searches.
 *
 * Plans are costed in rows touched, the rows estimated from the column's
 * range of values (qy_fraction); a row reached through an index costs
 * more than one in natural order (random reads, which the cursor
 * prefetches ahead).
 *
 * The order walked is announced to SQLite (orderByConsumed), forwards or
 * backwards, so that an ORDER BY or GROUP BY on such a column needs no
 * sorter. NULL is INT64_MIN in an INT column: it sorts first, as SQLite
 * sorts NULL, and every range starts above it. A row whose INT64_MIN is a
 * value (qy_col.vmin) sorts after the NULLs, as the smallest value, and
 * ranges and equalities find it: the searches tell the two apart, and
 * the index puts the NULLs first among its rows of INT64_MIN.
 *
 * The plan travels as idxNum (the bounds given and their kinds, QP_*) and
 * idxStr "<order> <primary> <secondary> <rows> <base> <used>": the column whose
 * index is walked (-1: natural order), the column the equality or range
 * applies to, the column a range applies to within an equality's rows
 * (QP_ROWID: the rowid; -1: none), the table's rows when planned, and
 * the columns the statement reads (colUsed, in hexadecimal).
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/pair.h"
#include "query/query_internal.h"

#define QY_MODULE "ringtrace"

/* idxNum bits: which bounds argv holds, in this order (EQ counts as one) */
#define QP_EQ 0x001      /* argv: the value of the primary key */
#define QP_LO 0x002      /* a lower bound: of the secondary key after QP_EQ, else the primary */
#define QP_LO_GT 0x004   /* ... strict (>) */
#define QP_HI 0x008      /* an upper bound of the key range */
#define QP_HI_LT 0x010   /* ... strict (<) */
#define QP_DESC 0x020    /* walk the range backwards */
#define QP_SORTED 0x040  /* counts on a column ascending in natural order */
#define QP_ROWID -2      /* key column: the rowid */
#define QP_MAX_COLS 4096 /* columns beyond are scanned, never indexed */

struct qy_vtab {
	sqlite3_vtab base;
	struct qy_store *s;
	struct qy_table *t;
	/* the rows the columns' sortedness and indexes were learned on: rows
	 * appended or cleared since make them stale */
	uint64_t seen_rows, seen_base;
};

/*
 * Walking an index reads each row's columns at random places: the cursor
 * asks for those of the row QY_AHEAD positions on, so that their cache
 * misses overlap with the work on the rows between.
 */
#define QY_AHEAD 16
#define QY_PREFETCH_COLS 8

struct qy_cursor {
	sqlite3_vtab_cursor base;
	struct qy_table *t;
	struct qy_store *s;
	const uint32_t *perm; /* NULL: natural order */
	int64_t pos, end, step;
	uint64_t row; /* the row at pos (valid while pos != end) */
	/* with perm: the range walked, the columns the statement reads */
	int64_t lo, len;
	int npf;
	const char *pf[QY_PREFETCH_COLS];
	unsigned pfsize[QY_PREFETCH_COLS];
};

/* ---- what the virtual table learns of a column ---- */

static void qy_vt_fresh(struct qy_vtab *vt)
{
	struct qy_table *t = vt->t;
	if (t->nrows != vt->seen_rows || t->base != vt->seen_base) {
		qy_table_changed(t);
		vt->seen_rows = t->nrows;
		vt->seen_base = t->base;
	}
}

/* Whether an INT column ascends in natural order, and its range (for
 * the plans' estimates): one pass, on first use. */
static int qy_col_sorted(struct qy_table *t, int c)
{
	struct qy_col *col = &t->cols[c];
	if (col->type != QY_INT)
		return 0;
	if (col->sorted < 0) {
		const int64_t *v = col->v;
		int64_t min = INT64_MAX, max = INT64_MIN, prev = INT64_MIN;
		int8_t sorted = 1;
		for (uint64_t i = 0; i < t->nrows; i++) {
			int64_t x = v[i];
			sorted &= x >= prev;
			prev = x;
			if (x != QY_NULL_INT) {
				min = x < min ? x : min;
				max = x > max ? x : max;
			}
		}
		if (sorted && col->nvmin) {
			/* ascending only if the NULLs come before the values
			 * INT64_MIN: the marked rows end the leading INT64_MINs */
			uint64_t p = 0;
			while (p < t->nrows && v[p] == INT64_MIN)
				p++;
			sorted = col->vmin[col->nvmin - 1] + 1 == p &&
				 col->vmin[0] + (uint64_t)col->nvmin == p;
		}
		col->min = min;
		col->max = max;
		col->sorted = sorted;
	}
	return col->sorted;
}

/*
 * The permutation index of an INT column: rows in ascending order of
 * their value, rows of equal value in natural order (a stable sort).
 * Linear passes, where a comparison sort would take log2(n) passes of
 * random reads: a counting sort when the values span no more than about
 * the rows (ids, threads, CPUs: one count per value), else an LSD radix
 * sort of (value - min) in 11-bit digits, as many as the span needs.
 * NULL (INT64_MIN) sorts first.
 */
#define QY_RADIX_BITS 11
#define QY_RADIX (1u << QY_RADIX_BITS)

/* The key sorted on: 0 for NULL, then 1 + (v - min), without overflow. */
static uint64_t qy_key(int64_t v, int64_t min)
{
	return v == QY_NULL_INT ? 0 : (uint64_t)v - (uint64_t)min + 1;
}

/* The digits of the radix sort, or 0 for a counting sort, for the
 * column's span of keys (0 .. span). */
static unsigned qy_perm_digits(uint64_t n, uint64_t span)
{
	unsigned digits = 0;
	if (span <= n + QY_RADIX)
		return 0;
	while (digits * QY_RADIX_BITS < 64 && (span >> (digits * QY_RADIX_BITS)) != 0)
		digits++;
	return digits;
}

/* The keys' span of a column (after qy_col_sorted): NULL, then min .. max. */
static uint64_t qy_perm_span(const struct qy_col *col)
{
	return col->min > col->max ? 0 : (uint64_t)col->max - (uint64_t)col->min + 1;
}

static int qy_perm_counting(const int64_t *v, uint64_t n, int64_t min, uint64_t span,
			    uint32_t *perm)
{
	uint32_t *count = calloc(span + 1, sizeof(*count));
	if (!count)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		count[qy_key(v[i], min)]++;
	uint32_t sum = 0;
	for (uint64_t d = 0; d <= span; d++) {
		uint32_t k = count[d];
		count[d] = sum;
		sum += k;
	}
	for (uint64_t i = 0; i < n; i++)
		perm[count[qy_key(v[i], min)]++] = (uint32_t)i;
	free(count);
	return 0;
}

static int qy_perm_radix(const int64_t *v, uint64_t n, int64_t min, uint64_t span, uint32_t *perm)
{
	unsigned digits = qy_perm_digits(n, span);
	uint64_t *key = malloc(n * sizeof(*key)), *key2 = malloc(n * sizeof(*key2));
	uint32_t *perm2 = malloc(n * sizeof(*perm2));
	uint64_t *c = malloc(QY_RADIX * sizeof(*c));
	int rc = -1;
	if (!key || !key2 || !perm2 || !c)
		goto out;
	for (uint64_t i = 0; i < n; i++)
		key[i] = qy_key(v[i], min);
	uint32_t *in = perm2, *out = perm;
	if (digits % 2 == 0) {
		in = perm;
		out = perm2;
	}
	for (uint64_t i = 0; i < n; i++)
		in[i] = (uint32_t)i;
	/* the passes alternate between the buffers, the last one into perm */
	for (unsigned d = 0; d < digits; d++) {
		unsigned shift = d * QY_RADIX_BITS;
		uint64_t sum = 0;
		memset(c, 0, QY_RADIX * sizeof(*c));
		for (uint64_t i = 0; i < n; i++)
			c[(key[i] >> shift) & (QY_RADIX - 1)]++;
		for (unsigned j = 0; j < QY_RADIX; j++) {
			uint64_t k = c[j];
			c[j] = sum;
			sum += k;
		}
		int last = d + 1 == digits;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t o = c[(key[i] >> shift) & (QY_RADIX - 1)]++;
			if (!last)
				key2[o] = key[i];
			out[o] = in[i];
		}
		uint64_t *tk = key;
		key = key2;
		key2 = tk;
		uint32_t *tp = in;
		in = out;
		out = tp;
	}
	rc = 0;
out:
	free(key);
	free(key2);
	free(perm2);
	free(c);
	return rc;
}

/*
 * The index's first rows are those holding INT64_MIN (key 0), in natural
 * order: the NULLs put before the rows where it is a value, as SQL sorts
 * them (the order stays natural within each).
 */
static void qy_perm_nulls_first(const struct qy_col *col, uint64_t n, uint32_t *perm)
{
	const int64_t *v = col->v;
	uint64_t p = 0, j = 0;
	if (!col->nvmin)
		return;
	while (p < n && v[perm[p]] == INT64_MIN)
		p++;
	for (uint64_t i = 0; i < p; i++)
		if (!qy_col_min_at(col, perm[i]))
			perm[j++] = perm[i];
	for (uint32_t m = 0; m < col->nvmin && j < p; m++)
		if (col->vmin[m] < n && v[col->vmin[m]] == INT64_MIN)
			perm[j++] = col->vmin[m];
}

static int qy_perm_make(struct qy_table *t, int c)
{
	struct qy_col *col = &t->cols[c];
	uint64_t n = t->nrows;
	if (col->perm)
		return 0;
	uint32_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	if (!perm)
		return -1;
	int rc = 0;
	int sorted = qy_col_sorted(t, c);
	uint64_t span = qy_perm_span(col);
	if (sorted || span == 0) {
		for (uint64_t i = 0; i < n; i++)
			perm[i] = (uint32_t)i;
	} else if (qy_perm_digits(n, span) == 0) {
		rc = qy_perm_counting(col->v, n, col->min, span, perm);
	} else {
		rc = qy_perm_radix(col->v, n, col->min, span, perm);
	}
	if (rc) {
		free(perm);
		return -1;
	}
	qy_perm_nulls_first(col, n, perm);
	col->perm = perm;
	return 0;
}

/* ---- bounds ---- */

/*
 * Narrow the key range [*a, *b] by "key OP v", as SQLite compares an
 * INTEGER column with v: numeric affinity applied to v, an integer
 * compared exactly with a real, every number below every text or blob,
 * nothing equal to NULL. 0: the range became empty.
 */
int qy_bound(sqlite3_value *v, int op, int64_t *a, int64_t *b)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	int type = sqlite3_value_numeric_type(v);
	if (type == SQLITE_INTEGER) {
		int64_t x = sqlite3_value_int64(v);
		if (op == SQLITE_INDEX_CONSTRAINT_EQ)
			lo = hi = x;
		else if (op == SQLITE_INDEX_CONSTRAINT_GT) {
			if (x == INT64_MAX)
				return 0;
			lo = x + 1;
		} else if (op == SQLITE_INDEX_CONSTRAINT_GE)
			lo = x;
		else if (op == SQLITE_INDEX_CONSTRAINT_LT) {
			if (x == INT64_MIN)
				return 0;
			hi = x - 1;
		} else
			hi = x;
	} else if (type == SQLITE_FLOAT) {
		double r = sqlite3_value_double(v);
		const double top = 9223372036854775808.0; /* 2^63 */
		if (isnan(r))
			return 0;
		double fl = floor(r), ce = ceil(r);
		int ge = op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE;
		int le = op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE;
		if (op == SQLITE_INDEX_CONSTRAINT_EQ) {
			if (fl != r || r >= top || r < -top)
				return 0;
			lo = hi = (int64_t)r;
		} else if (ge) {
			/* key > r: key >= floor(r) + 1; key >= r: key >= ceil(r) */
			double m = op == SQLITE_INDEX_CONSTRAINT_GT ? fl + 1 : ce;
			if (m >= top)
				return 0;
			if (m > -top)
				lo = (int64_t)m;
		} else if (le) {
			/* key < r: key <= ceil(r) - 1; key <= r: key <= floor(r) */
			double m = op == SQLITE_INDEX_CONSTRAINT_LT ? ce - 1 : fl;
			if (m < -top)
				return 0;
			if (m < top)
				hi = (int64_t)m;
		}
	} else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
		/* every integer is below: only < and <= hold, for every row */
		if (op != SQLITE_INDEX_CONSTRAINT_LT && op != SQLITE_INDEX_CONSTRAINT_LE)
			return 0;
	} else {
		return 0; /* NULL */
	}
	if (lo > *a)
		*a = lo;
	if (hi < *b)
		*b = hi;
	return *a <= *b;
}

/* The first position in [lo, hi) whose key is >= x (or > x when after);
 * NULL is below every x. */
static int64_t qy_search(const struct qy_table *t, int kc, const uint32_t *perm, int64_t lo,
			 int64_t hi, int64_t x, int after)
{
	const struct qy_col *col = kc >= 0 ? &t->cols[kc] : NULL;
	const int64_t *v = col ? col->v : NULL;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		uint64_t row = perm ? perm[mid] : (uint64_t)mid;
		int64_t k = v ? v[row] : (int64_t)(t->base + row);
		if ((v && qy_int_null(col, row, k)) || (after ? k <= x : k < x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the module ---- */

static int qy_declare(sqlite3 *db, const struct qy_table *t, char **perr)
{
	sqlite3_str *q = sqlite3_str_new(db);
	sqlite3_str_appendall(q, "CREATE TABLE x(");
	for (uint32_t c = 0; c < t->ncols; c++) {
		static const char *const types[] = {"", "INTEGER", "REAL", "TEXT"};
		uint8_t type = t->cols[c].type;
		/* "%w": the name in double quotes, its double quotes doubled
		 * (as qy_ident quotes it, at any length) */
		sqlite3_str_appendf(q, "%s\"%w\" %s", c ? ", " : "", t->cols[c].name,
				    type <= QY_TEXT ? types[type] : "");
	}
	sqlite3_str_appendall(q, ")");
	char *sql = sqlite3_str_finish(q);
	if (!sql)
		return SQLITE_NOMEM;
	int rc = sqlite3_declare_vtab(db, sql);
	if (rc != SQLITE_OK)
		*perr = sqlite3_mprintf("table %s: %s", t->name, sqlite3_errmsg(db));
	sqlite3_free(sql);
	return rc;
}

static int qy_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
		      char **perr)
{
	struct qy_store *s = aux;
	/* argv: module, schema, table, then the arguments: the store's table index */
	if (argc != 4 || strcmp(argv[1], "temp") != 0) {
		*perr = sqlite3_mprintf("a " QY_MODULE " table is made by ringtrace, in temp");
		return SQLITE_ERROR;
	}
	char *end;
	errno = 0;
	unsigned long i = strtoul(argv[3], &end, 10);
	if (errno || end == argv[3] || *end || i >= qy_table_count(s)) {
		*perr = sqlite3_mprintf("no table %s in the trace", argv[3]);
		return SQLITE_ERROR;
	}
	struct qy_table *t = qy_table_at(s, (uint32_t)i);
	if (t->ops) {
		*perr = sqlite3_mprintf("table %s is computed by a module of its own", t->name);
		return SQLITE_ERROR;
	}
	int rc = qy_declare(db, t, perr);
	if (rc != SQLITE_OK)
		return rc;
	/* reading memory of our own: safe to use from views and triggers */
	sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
	struct qy_vtab *vt = sqlite3_malloc(sizeof(*vt));
	if (!vt)
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->s = s;
	vt->t = t;
	vt->seen_rows = t->nrows;
	vt->seen_base = t->base;
	*out = &vt->base;
	return SQLITE_OK;
}

static int qy_disconnect(sqlite3_vtab *base)
{
	sqlite3_free(base);
	return SQLITE_OK;
}

static int qy_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
	struct qy_vtab *vt = (struct qy_vtab *)base;
	struct qy_cursor *c = sqlite3_malloc(sizeof(*c));
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->t = vt->t;
	c->s = vt->s;
	*out = &c->base;
	return SQLITE_OK;
}

static int qy_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* The columns to prefetch on an index walk: those the statement reads
 * (colUsed: bit i column i, bit 63 every column from 63 on). */
static void qy_prefetch_cols(struct qy_cursor *c, uint64_t used)
{
	const struct qy_table *t = c->t;
	c->npf = 0;
	for (uint32_t i = 0; i < t->ncols && c->npf < QY_PREFETCH_COLS; i++) {
		if (!(used & (UINT64_C(1) << (i < 63 ? i : 63))))
			continue;
		c->pf[c->npf] = t->cols[i].v;
		c->pfsize[c->npf] = t->cols[i].type == QY_TEXT ? sizeof(uint32_t) : 8;
		c->npf++;
	}
}

/* A plan's column: -1 none, QP_ROWID, or an INT column. */
static int qy_plan_col(const struct qy_table *t, int c)
{
	return c == -1 || c == QP_ROWID ||
	       (c >= 0 && (uint32_t)c < t->ncols && t->cols[c].type == QY_INT);
}

static int qy_filter(sqlite3_vtab_cursor *cur, int plan, const char *idx, int argc,
		     sqlite3_value **argv)
{
	struct qy_cursor *c = (struct qy_cursor *)cur;
	struct qy_vtab *vt = (struct qy_vtab *)cur->pVtab;
	struct qy_table *t = c->t;
	int oc, pk, sk, k = 0;
	unsigned long long rows, base, used;
	qy_vt_fresh(vt);
	if (!idx ||
	    sscanf(idx, "%d %d %d %llu %llu %llx", &oc, &pk, &sk, &rows, &base, &used) != 6 ||
	    oc == QP_ROWID || !qy_plan_col(t, oc) || !qy_plan_col(t, pk) || !qy_plan_col(t, sk))
		return SQLITE_ERROR;
	if ((plan & QP_SORTED) && (rows != t->nrows || base != t->base)) {
		/* the plan counted on columns ascending in rows since changed */
		sqlite3_free(vt->base.zErrMsg);
		vt->base.zErrMsg = sqlite3_mprintf(
			"table %s changed since the statement was prepared", t->name);
		return SQLITE_ERROR;
	}
	c->perm = NULL;
	if (oc >= 0) {
		if (qy_perm_make(t, oc))
			return SQLITE_NOMEM;
		c->perm = t->cols[oc].perm;
	}
	int64_t lo = 0, hi = (int64_t)t->nrows;
	int64_t a = INT64_MIN, b = INT64_MAX; /* every value (NULL is below) */
	if (plan & QP_EQ) {
		if (k >= argc || !qy_bound(argv[k++], SQLITE_INDEX_CONSTRAINT_EQ, &a, &b))
			goto empty;
		lo = qy_search(t, pk, c->perm, lo, hi, a, 0);
		hi = qy_search(t, pk, c->perm, lo, hi, b, 1);
		a = INT64_MIN;
		b = INT64_MAX;
	}
	if (plan & (QP_LO | QP_HI)) {
		int key = plan & QP_EQ ? sk : pk;
		if (plan & QP_LO) {
			int op = plan & QP_LO_GT ? SQLITE_INDEX_CONSTRAINT_GT
						 : SQLITE_INDEX_CONSTRAINT_GE;
			if (k >= argc || !qy_bound(argv[k++], op, &a, &b))
				goto empty;
		}
		if (plan & QP_HI) {
			int op = plan & QP_HI_LT ? SQLITE_INDEX_CONSTRAINT_LT
						 : SQLITE_INDEX_CONSTRAINT_LE;
			if (k >= argc || !qy_bound(argv[k++], op, &a, &b))
				goto empty;
		}
		lo = qy_search(t, key, c->perm, lo, hi, a, 0);
		hi = qy_search(t, key, c->perm, lo, hi, b, 1);
	}
	c->lo = lo;
	c->len = hi - lo;
	if (c->perm)
		qy_prefetch_cols(c, used);
	if (plan & QP_DESC) {
		c->pos = hi - 1;
		c->end = lo - 1;
		c->step = -1;
	} else {
		c->pos = lo;
		c->end = hi;
		c->step = 1;
	}
	if (c->pos != c->end)
		c->row = c->perm ? c->perm[c->pos] : (uint64_t)c->pos;
	return SQLITE_OK;
empty:
	c->pos = c->end = 0;
	c->lo = c->len = 0;
	return SQLITE_OK;
}

static int qy_next(sqlite3_vtab_cursor *cur)
{
	struct qy_cursor *c = (struct qy_cursor *)cur;
	c->pos += c->step;
	if (!c->perm) {
		c->row = (uint64_t)c->pos;
		return SQLITE_OK;
	}
	if (c->pos != c->end)
		c->row = c->perm[c->pos];
	int64_t ahead = c->pos + c->step * QY_AHEAD;
	if ((uint64_t)(ahead - c->lo) < (uint64_t)c->len) {
		uint64_t r = c->perm[ahead];
		for (int i = 0; i < c->npf; i++)
			__builtin_prefetch(c->pf[i] + r * c->pfsize[i]);
	}
	return SQLITE_OK;
}

static int qy_eof(sqlite3_vtab_cursor *cur)
{
	struct qy_cursor *c = (struct qy_cursor *)cur;
	return c->pos == c->end;
}

static int qy_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int i)
{
	struct qy_cursor *c = (struct qy_cursor *)cur;
	const struct qy_col *col = &c->t->cols[i];
	/* a column left without a result is NULL */
	switch (col->type) {
	case QY_INT: {
		int64_t x = ((const int64_t *)col->v)[c->row];
		if (!qy_int_null(col, c->row, x))
			sqlite3_result_int64(ctx, x);
		break;
	}
	case QY_REAL: {
		double x = ((const double *)col->v)[c->row];
		if (!isnan(x))
			sqlite3_result_double(ctx, x);
		break;
	}
	case QY_TEXT: {
		uint32_t id = ((const uint32_t *)col->v)[c->row];
		if (id) {
			size_t len;
			const char *p = qy_str_get(c->s, id, &len);
			/* the store's strings never move: no copy */
			if (p)
				sqlite3_result_text64(ctx, p, len, SQLITE_STATIC, SQLITE_UTF8);
		}
		break;
	}
	}
	return SQLITE_OK;
}

static int qy_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *out)
{
	struct qy_cursor *c = (struct qy_cursor *)cur;
	*out = (sqlite_int64)(c->t->base + c->row);
	return SQLITE_OK;
}

/* ---- the plan ---- */

struct qy_plan {
	int oc, pk, sk; /* as in idxStr */
	int flags;      /* QP_* */
	int eq, lo, hi; /* the constraints used (index in aConstraint), or -1 */
	double cost, rows;
	int consumed; /* the ORDER BY is walked */
};

/* Whether the rows a plan walks ascend by column x (QP_ROWID: rowid):
 * 1 yes, 2 yes and it counts on x ascending in natural order, 0 no. */
static int qy_walk_ascends(struct qy_table *t, const struct qy_plan *p, int x, int first)
{
	if ((p->flags & QP_EQ) && x == p->pk)
		return 1; /* one value */
	/* the index's order first; within its ties, natural order */
	if (p->oc >= 0 && !(p->flags & QP_EQ) && first)
		return x == p->oc;
	/* natural order, or one value's rows of an index, in natural order */
	if (x == QP_ROWID)
		return 1;
	return x >= 0 && qy_col_sorted(t, x) ? 2 : 0;
}

static int qy_order_consumed(struct qy_table *t, const sqlite3_index_info *info, struct qy_plan *p)
{
	int first = 1;
	if (info->nOrderBy <= 0)
		return 0;
	for (int i = 0; i < info->nOrderBy; i++) {
		const struct sqlite3_index_orderby *o = &info->aOrderBy[i];
		int x = o->iColumn < 0 ? QP_ROWID : o->iColumn;
		if (o->desc != info->aOrderBy[0].desc || (x >= 0 && x >= (int)t->ncols))
			return 0;
		int up = qy_walk_ascends(t, p, x, first);
		if (!up)
			return 0;
		if (up == 2)
			p->flags |= QP_SORTED;
		/* after a column with ties, only columns ascending within them */
		if (!((p->flags & QP_EQ) && x == p->pk))
			first = 0;
	}
	if (info->aOrderBy[0].desc)
		p->flags |= QP_DESC;
	return 1;
}

/* The constraints usable on each key (0: rowid, 1 + c: column c). */
struct qy_keys {
	int n;
	int *eq, *lo, *hi;
};

static int qy_keys_collect(struct qy_table *t, const sqlite3_index_info *info, struct qy_keys *k)
{
	k->n = 1 + (int)(t->ncols < QP_MAX_COLS ? t->ncols : QP_MAX_COLS);
	k->eq = sqlite3_malloc64(3 * (uint64_t)k->n * sizeof(int));
	if (!k->eq)
		return SQLITE_NOMEM;
	k->lo = k->eq + k->n;
	k->hi = k->lo + k->n;
	for (int i = 0; i < 3 * k->n; i++)
		k->eq[i] = -1;
	for (int i = 0; i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];
		int slot = c->iColumn < 0 ? 0 : c->iColumn + 1;
		if (!c->usable || slot >= k->n || (slot && t->cols[slot - 1].type != QY_INT))
			continue;
		int *at = NULL;
		if (c->op == SQLITE_INDEX_CONSTRAINT_EQ)
			at = &k->eq[slot];
		else if (c->op == SQLITE_INDEX_CONSTRAINT_GT || c->op == SQLITE_INDEX_CONSTRAINT_GE)
			at = &k->lo[slot];
		else if (c->op == SQLITE_INDEX_CONSTRAINT_LT || c->op == SQLITE_INDEX_CONSTRAINT_LE)
			at = &k->hi[slot];
		if (at && *at < 0)
			*at = i;
	}
	return SQLITE_OK;
}

static int qy_slot_col(int slot)
{
	return slot ? slot - 1 : QP_ROWID;
}

static int qy_slot_natural(struct qy_table *t, int slot)
{
	return slot == 0 || qy_col_sorted(t, slot - 1);
}

/*
 * The fraction of the rows a key's constraints keep (eq, lo, hi: indexes
 * in aConstraint, or -1). From the key's range of values, as if spread
 * evenly: a value known when planning (a literal) narrows it as the
 * filter will; an equality to a value not known yet keeps one value of
 * the range (a unique column: one row); a bound not known yet keeps a
 * quarter.
 */
static double qy_fraction(struct qy_table *t, sqlite3_index_info *info, int key, int eq, int lo,
			  int hi)
{
	int64_t min, max, a = INT64_MIN + 1, b = INT64_MAX;
	double guess = 1;
	if (key == QP_ROWID) {
		min = (int64_t)t->base;
		max = (int64_t)(t->base + t->nrows) - 1;
	} else {
		qy_col_sorted(t, key);
		min = t->cols[key].min;
		max = t->cols[key].max;
	}
	if (min > max)
		return 0; /* every value NULL */
	double span = (double)max - (double)min + 1;
	const int cons[3] = {eq, lo, hi};
	for (int i = 0; i < 3; i++) {
		sqlite3_value *v = NULL, *d = NULL;
		if (cons[i] < 0)
			continue;
		int op = info->aConstraint[cons[i]].op;
		if (sqlite3_vtab_rhs_value(info, cons[i], &v) == SQLITE_OK && v &&
		    (d = sqlite3_value_dup(v)) != NULL) {
			int some = qy_bound(d, op, &a, &b);
			sqlite3_value_free(d);
			if (!some)
				return 0;
		} else {
			guess *= op == SQLITE_INDEX_CONSTRAINT_EQ ? 1 / span : 0.25;
		}
	}
	a = a > min ? a : min;
	b = b < max ? b : max;
	if (a > b)
		return 0;
	return guess * ((double)b - (double)a + 1) / span;
}

/* The rows a LIMIT (and OFFSET) lets the statement read, when known when
 * planning (SQLite offers them on a query of this table alone); else -1. */
static double qy_limit(sqlite3_index_info *info)
{
	double limit = -1, offset = 0;
	for (int i = 0; i < info->nConstraint; i++) {
		int op = info->aConstraint[i].op;
		sqlite3_value *v = NULL;
		if (op != SQLITE_INDEX_CONSTRAINT_LIMIT && op != SQLITE_INDEX_CONSTRAINT_OFFSET)
			continue;
		if (sqlite3_vtab_rhs_value(info, i, &v) != SQLITE_OK || !v ||
		    sqlite3_value_type(v) != SQLITE_INTEGER)
			return -1;
		double x = (double)sqlite3_value_int64(v);
		if (op == SQLITE_INDEX_CONSTRAINT_LIMIT)
			limit = x;
		else
			offset = x > 0 ? x : 0;
	}
	return limit < 0 ? -1 : limit + offset;
}

/*
 * Whether the plan runs once a statement: its values known when planning
 * (literals), or no value at all (an order walked). A plan on a value
 * known only when running (a join's column, a parameter) may run once a
 * row of another table: an index pays for itself there, and SQLite,
 * which multiplies the cost by the runs, must not count it each time.
 */
static int qy_plan_once(sqlite3_index_info *info, const struct qy_plan *p)
{
	const int cons[3] = {p->eq, (p->flags & QP_EQ) ? -1 : p->lo,
			     (p->flags & QP_EQ) ? -1 : p->hi};
	for (int i = 0; i < 3; i++) {
		sqlite3_value *v = NULL;
		if (cons[i] >= 0 && (sqlite3_vtab_rhs_value(info, cons[i], &v) != SQLITE_OK || !v))
			return 0;
	}
	return 1;
}

/*
 * The plan's cost, in rows touched: a full scan n; a binary search
 * log2(n), then the rows in range; a row reached through an index three
 * times dearer than one in natural order (its columns read at random
 * places); plus the making of an index not made yet, for a plan that
 * runs once. An ORDER BY not walked costs SQLite a sort, which the choice
 * between plans counts (SQLite adds it itself to the cost returned).
 */
static double qy_plan_cost(struct qy_table *t, sqlite3_index_info *info, struct qy_plan *p)
{
	double n = t->nrows ? (double)t->nrows : 1, lg = log2(n) + 1;
	double reach = p->oc >= 0 ? 3 : 1;
	double rows = n, cost = 0;
	if (p->flags & QP_EQ) {
		rows = n * qy_fraction(t, info, p->pk, p->eq, -1, -1);
		cost += lg * reach;
		if (p->flags & (QP_LO | QP_HI)) {
			rows *= qy_fraction(t, info, p->sk, -1, p->lo, p->hi);
			cost += lg * reach;
		}
	} else if (p->flags & (QP_LO | QP_HI)) {
		rows = n * qy_fraction(t, info, p->pk, -1, p->lo, p->hi);
		cost += lg * reach;
	}
	if (rows < 1)
		rows = 1;
	if (p->oc >= 0 && !t->cols[p->oc].perm && qy_plan_once(info, p)) {
		/* the index made for this run alone; in rows scanned, as measured:
		 * a counting sort about one, a radix sort one and 0.7 a digit */
		unsigned digits = qy_perm_digits(t->nrows, qy_perm_span(&t->cols[p->oc]));
		cost += n * (1 + 0.7 * digits);
	}
	p->rows = rows;
	p->consumed = qy_order_consumed(t, info, p);
	/* a LIMIT stops a walk in order early, and makes SQLite's sort keep
	 * only that many rows (a heap that most rows only pass by) */
	double limit = qy_limit(info), kept = limit >= 0 && limit < rows ? limit + 1 : rows;
	int ordered = p->consumed || info->nOrderBy == 0;
	p->cost = cost + (ordered ? kept : rows) * reach;
	if (ordered)
		return p->cost;
	return p->cost + (kept < rows ? rows * 0.5 + kept * log2(kept + 1) : rows * log2(rows + 1));
}

static void qy_plan_range(struct qy_plan *p, const struct qy_keys *k, int slot,
			  const sqlite3_index_info *info)
{
	if (k->lo[slot] >= 0) {
		p->lo = k->lo[slot];
		p->flags |= QP_LO;
		if (info->aConstraint[p->lo].op == SQLITE_INDEX_CONSTRAINT_GT)
			p->flags |= QP_LO_GT;
	}
	if (k->hi[slot] >= 0) {
		p->hi = k->hi[slot];
		p->flags |= QP_HI;
		if (info->aConstraint[p->hi].op == SQLITE_INDEX_CONSTRAINT_LT)
			p->flags |= QP_HI_LT;
	}
}

/* The plans for one key (an equality, else a range), the best in *best. */
static void qy_plans_for(struct qy_table *t, sqlite3_index_info *info, const struct qy_keys *k,
			 int slot, struct qy_plan *best, double *bestc)
{
	int natural = qy_slot_natural(t, slot);
	struct qy_plan p = {.oc = natural ? -1 : qy_slot_col(slot),
			    .pk = qy_slot_col(slot),
			    .sk = -1,
			    .flags = natural && slot ? QP_SORTED : 0,
			    .eq = -1,
			    .lo = -1,
			    .hi = -1};
	if (k->eq[slot] >= 0) {
		p.eq = k->eq[slot];
		p.flags |= QP_EQ;
		/* within the value's rows, a range on a column ascending there */
		int sk = -1;
		for (int s = 0; s < k->n; s++) {
			if (s == slot || (k->lo[s] < 0 && k->hi[s] < 0) || !qy_slot_natural(t, s))
				continue;
			if (sk < 0 || (k->lo[s] >= 0 && k->hi[s] >= 0))
				sk = s;
		}
		if (sk >= 0) {
			p.sk = qy_slot_col(sk);
			if (sk)
				p.flags |= QP_SORTED;
			qy_plan_range(&p, k, sk, info);
		}
	} else {
		qy_plan_range(&p, k, slot, info);
	}
	double c = qy_plan_cost(t, info, &p);
	if (c < *bestc) {
		*best = p;
		*bestc = c;
	}
}

static int qy_best_index(sqlite3_vtab *base, sqlite3_index_info *info)
{
	struct qy_vtab *vt = (struct qy_vtab *)base;
	struct qy_table *t = vt->t;
	struct qy_keys k;
	qy_vt_fresh(vt);
	int rc = qy_keys_collect(t, info, &k);
	if (rc != SQLITE_OK)
		return rc;
	/* the full scan in natural order: always possible, so that no set of
	 * usable constraints is without a plan (never SQLITE_CONSTRAINT) */
	struct qy_plan best = {.oc = -1, .pk = -1, .sk = -1, .eq = -1, .lo = -1, .hi = -1};
	double bestc = qy_plan_cost(t, info, &best);
	for (int s = 0; s < k.n; s++)
		if (k.eq[s] >= 0 || k.lo[s] >= 0 || k.hi[s] >= 0)
			qy_plans_for(t, info, &k, s, &best, &bestc);
	/* an ORDER BY an INT column: walked through its index */
	if (info->nOrderBy > 0 && info->aOrderBy[0].iColumn >= 0 &&
	    info->aOrderBy[0].iColumn < k.n - 1 &&
	    t->cols[info->aOrderBy[0].iColumn].type == QY_INT) {
		struct qy_plan p = {.oc = info->aOrderBy[0].iColumn,
				    .pk = -1,
				    .sk = -1,
				    .eq = -1,
				    .lo = -1,
				    .hi = -1};
		double c = qy_plan_cost(t, info, &p);
		if (c < bestc) {
			best = p;
			bestc = c;
		}
	}
	sqlite3_free(k.eq);
	int argv = 1;
	if (best.eq >= 0) {
		info->aConstraintUsage[best.eq].argvIndex = argv++;
		info->aConstraintUsage[best.eq].omit = 1;
	}
	if (best.lo >= 0) {
		info->aConstraintUsage[best.lo].argvIndex = argv++;
		info->aConstraintUsage[best.lo].omit = 1;
	}
	if (best.hi >= 0) {
		info->aConstraintUsage[best.hi].argvIndex = argv++;
		info->aConstraintUsage[best.hi].omit = 1;
	}
	info->idxNum = best.flags;
	info->idxStr = sqlite3_mprintf("%d %d %d %llu %llu %llx", best.oc, best.pk, best.sk,
				       (unsigned long long)t->nrows, (unsigned long long)t->base,
				       (unsigned long long)info->colUsed);
	if (!info->idxStr)
		return SQLITE_NOMEM;
	info->needToFreeIdxStr = 1;
	info->orderByConsumed = best.consumed;
	info->estimatedCost = best.cost;
	info->estimatedRows = (sqlite3_int64)best.rows;
	if ((best.flags & QP_EQ) && best.pk == QP_ROWID)
		info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
	return SQLITE_OK;
}

static const sqlite3_module qy_module = {
	.iVersion = 1,
	.xCreate = qy_connect,
	.xConnect = qy_connect,
	.xBestIndex = qy_best_index,
	.xDisconnect = qy_disconnect,
	.xDestroy = qy_disconnect,
	.xOpen = qy_open,
	.xClose = qy_close,
	.xFilter = qy_filter,
	.xNext = qy_next,
	.xEof = qy_eof,
	.xColumn = qy_column,
	.xRowid = qy_rowid,
};

/* ---- attaching ---- */

static int qy_module_add(sqlite3 *db, struct qy_store *s, const char *name,
			 const sqlite3_module *module, char *err, size_t errsize)
{
	/* once per connection: the tables made so far keep the module they
	 * were made with */
	sqlite3_stmt *st;
	int have = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_module_list WHERE name = ?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		have = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	if (have)
		return 0;
	/* pairs() comes with the module of the stored tables */
	if (sqlite3_create_module_v2(db, name, module, s, NULL) != SQLITE_OK ||
	    (module == &qy_module && qy_pairs_register(db, s) != SQLITE_OK)) {
		qy_err(err, errsize, "registering the virtual table module: %s",
		       sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

int qy_sqlite_attach_table(sqlite3 *db, struct qy_store *s, struct qy_table *t, char *err,
			   size_t errsize)
{
	uint32_t i, n = qy_table_count(s);
	for (i = 0; i < n && qy_table_at(s, i) != t; i++)
		;
	if (i == n) {
		qy_err(err, errsize, "table %s is not the store's", t->name);
		return -1;
	}
	/* a computed table has a module of its own */
	const char *mname = t->ops ? t->ops->module_name : QY_MODULE;
	if (qy_module_add(db, s, mname, t->ops ? t->ops->module : &qy_module, err, errsize))
		return -1;
	char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.\"%w\" USING %s(%u)", t->name, mname,
				    i);
	if (!sql) {
		qy_err(err, errsize, "out of memory");
		return -1;
	}
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		qy_err(err, errsize, "table %s: %s", t->name, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int qy_sqlite_attach(sqlite3 *db, struct qy_store *s, char *err, size_t errsize)
{
	if (qy_module_add(db, s, QY_MODULE, &qy_module, err, errsize))
		return -1;
	for (uint32_t i = 0; i < qy_table_count(s); i++)
		if (qy_sqlite_attach_table(db, s, qy_table_at(s, i), err, errsize))
			return -1;
	return 0;
}
