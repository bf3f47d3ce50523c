/*
 * tests/test_query_vtab.c - the store's tables through SQLite
 * (src/query/vtab.c, db.c): every query answers exactly what SQLite
 * answers on a native copy of the same rows (qy_sqlite_copy), whatever
 * plan the virtual table chose (binary search on a sorted column, an
 * index made on first use, ranges within an equality, ORDER BY walked);
 * the plans are not nested full scans (counted in VM steps); a value
 * INT64_MIN (marked by qy_i64_min) is a value, not the NULL the store
 * keeps as INT64_MIN, in every plan and order; names from
 * the trace stay data; the lockdown keeps SQL inside the database.
 */
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "check.h"
#include "query/query_api.h"

#define NROWS 100000
#define NTHREADS 100
#define HOSTILE_TABLE "x\"; DROP TABLE ev; --'"
#define HOSTILE_COL "a\"b; c"

static uint64_t rng_state;
static uint32_t rng(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

/*
 * thr:  utid (0..99, ascending), tid, name (text, some NULL)
 * ev:   id (ascending, unique), ts (ascending, repeats), utid (random, some
 *       NULL), dur (random, some NULL), arg_set_id (random groups), val
 *       (quarters, some NaN), name (a few strings, some NULL), cpu (0..7)
 * empty: no rows; HOSTILE_TABLE: a column HOSTILE_COL and one named select
 */
static struct qy_store *make_store(uint64_t nrows)
{
	static const struct qy_coldef thr_cols[] = {
		{"utid", QY_INT}, {"tid", QY_INT}, {"name", QY_TEXT}};
	static const struct qy_coldef ev_cols[] = {
		{"id", QY_INT},         {"ts", QY_INT},   {"utid", QY_INT},  {"dur", QY_INT},
		{"arg_set_id", QY_INT}, {"val", QY_REAL}, {"name", QY_TEXT}, {"cpu", QY_INT}};
	static const struct qy_coldef empty_cols[] = {{"a", QY_INT}, {"b", QY_TEXT}};
	static const struct qy_coldef hostile_cols[] = {{HOSTILE_COL, QY_INT}, {"select", QY_TEXT}};
	static const char *const names[] = {"read", "write", "it's \"quoted\"", "poll", "x; DROP"};
	struct qy_store *s = qy_store_new();
	CHECK(s);
	rng_state = 42;
	struct qy_table *thr = qy_table_add(s, "thr", thr_cols, 3);
	struct qy_table *ev = qy_table_add(s, "ev", ev_cols, 8);
	CHECK(qy_table_add(s, "empty", empty_cols, 2));
	struct qy_table *h = qy_table_add(s, HOSTILE_TABLE, hostile_cols, 2);
	CHECK(thr && ev && h);
	for (int i = 0; i < NTHREADS; i++) {
		int64_t r = qy_row(thr);
		CHECK(r == i);
		qy_i64(thr, 0)[r] = i;
		qy_i64(thr, 1)[r] = 1000 + i * 7;
		char name[32];
		snprintf(name, sizeof(name), "thread-%d", i);
		qy_sid(thr, 2)[r] = i % 10 == 3 ? 0 : qy_strz(s, name);
	}
	int64_t ts = 1000000;
	for (uint64_t i = 0; i < nrows; i++) {
		int64_t r = qy_row(ev);
		CHECK(r == (int64_t)i);
		ts += rng() % 3 == 0 ? 0 : rng() % 1000;
		qy_i64(ev, 0)[r] = (int64_t)i;
		qy_i64(ev, 1)[r] = ts;
		qy_i64(ev, 2)[r] = rng() % 50 == 0 ? QY_NULL_INT : (int64_t)(rng() % NTHREADS);
		qy_i64(ev, 3)[r] = rng() % 20 == 0 ? QY_NULL_INT : (int64_t)(rng() % 5000) - 100;
		qy_i64(ev, 4)[r] = (int64_t)(rng() % (nrows / 4 + 1));
		qy_f64(ev, 5)[r] = rng() % 10 == 0 ? NAN : (double)(rng() % 4000) * 0.25;
		uint32_t k = rng() % 6;
		qy_sid(ev, 6)[r] = k == 5 ? 0 : qy_strz(s, names[k]);
		qy_i64(ev, 7)[r] = rng() % 8;
	}
	for (int i = 0; i < 10; i++) {
		int64_t r = qy_row(h);
		qy_i64(h, 0)[r] = i;
		qy_sid(h, 1)[r] = qy_strz(s, names[i % 5]);
	}
	return s;
}

static sqlite3 *open_db(struct qy_store *s, int copy)
{
	sqlite3 *db;
	char err[256];
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
	CHECKF(qy_sqlite_attach(db, s, err, sizeof(err)) == 0, "%s", err);
	if (copy)
		CHECKF(qy_sqlite_copy(db, s, "main", 1, err, sizeof(err)) == 0, "%s", err);
	return db;
}

/* The query with every '@' replaced by schema and a dot. */
static char *with_schema(const char *q, const char *schema)
{
	sqlite3_str *b = sqlite3_str_new(NULL);
	for (const char *p = q; *p; p++) {
		if (*p == '@')
			sqlite3_str_appendf(b, "%s.", schema);
		else
			sqlite3_str_appendchar(b, 1, *p);
	}
	char *r = sqlite3_str_finish(b);
	CHECK(r);
	return r;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	CHECKF(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
	       sqlite3_errmsg(db));
	return st;
}

/* Both columns hold the same type and value. */
static int same_value(sqlite3_stmt *a, sqlite3_stmt *b, int i)
{
	int t = sqlite3_column_type(a, i);
	if (t != sqlite3_column_type(b, i))
		return 0;
	switch (t) {
	case SQLITE_INTEGER:
		return sqlite3_column_int64(a, i) == sqlite3_column_int64(b, i);
	case SQLITE_FLOAT:
		return sqlite3_column_double(a, i) == sqlite3_column_double(b, i);
	case SQLITE_NULL:
		return 1;
	default: {
		const void *pa = sqlite3_column_blob(a, i), *pb = sqlite3_column_blob(b, i);
		int na = sqlite3_column_bytes(a, i), nb = sqlite3_column_bytes(b, i);
		return na == nb && (na == 0 || memcmp(pa, pb, (size_t)na) == 0);
	}
	}
}

/*
 * The query on the virtual tables (temp) and on their native copies
 * (main): the same rows in the same order. The rows, and the VM steps
 * the virtual tables' run took in *steps.
 */
static uint64_t compare_query(sqlite3 *db, const char *q, uint64_t *steps)
{
	char *qv = with_schema(q, "temp"), *qn = with_schema(q, "main");
	sqlite3_stmt *v = prepare(db, qv), *n = prepare(db, qn);
	uint64_t rows = 0;
	CHECK(sqlite3_column_count(v) == sqlite3_column_count(n));
	for (;;) {
		int rv = sqlite3_step(v), rn = sqlite3_step(n);
		CHECKF(rv == rn, "%s: vtab %d (%s), native %d, at row %" PRIu64, q, rv,
		       sqlite3_errmsg(db), rn, rows);
		CHECKF(rv == SQLITE_ROW || rv == SQLITE_DONE, "%s: %s", q, sqlite3_errmsg(db));
		if (rv == SQLITE_DONE)
			break;
		for (int i = 0; i < sqlite3_column_count(v); i++)
			CHECKF(same_value(v, n, i),
			       "%s: row %" PRIu64 " column %d: vtab '%s', native '%s'", q, rows, i,
			       sqlite3_column_text(v, i), sqlite3_column_text(n, i));
		rows++;
	}
	if (steps)
		*steps = (uint64_t)sqlite3_stmt_status(v, SQLITE_STMTSTATUS_VM_STEP, 0);
	sqlite3_finalize(v);
	sqlite3_finalize(n);
	sqlite3_free(qv);
	sqlite3_free(qn);
	return rows;
}

/* Every query of the list answers the same on both, each with rows. */
static void compare_all(const char *const *qs, size_t n)
{
	struct qy_store *s = make_store(NROWS);
	sqlite3 *db = open_db(s, 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t rows = compare_query(db, qs[i], NULL);
		CHECKF(rows > 0, "%s: no rows, nothing compared", qs[i]);
	}
	sqlite3_close(db);
	qy_store_free(s);
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = prepare(db, sql);
	CHECKF(sqlite3_step(st) == SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void test_counts_and_sums(void)
{
	static const char *const qs[] = {
		"SELECT count(*), count(utid), count(dur), sum(dur), sum(ts), min(ts), max(ts) FROM @ev",
		"SELECT count(*), count(val), sum(val), count(name), count(DISTINCT name) FROM @ev",
		"SELECT count(*), sum(tid), group_concat(name, ',') FROM @thr",
		"SELECT * FROM @ev",
		"SELECT * FROM @thr",
		"SELECT count(*), sum(cpu) FROM @ev WHERE dur > 1000",
		"SELECT count(*) FROM @ev WHERE name = 'it''s \"quoted\"'",
		"SELECT count(*) FROM @ev WHERE name IS NULL",
		"SELECT count(*) FROM @ev WHERE val IS NULL",
		"SELECT count(*) FROM @ev WHERE utid IS NULL",
	};
	compare_all(qs, sizeof(qs) / sizeof(qs[0]));
}

/* id, ts and rowid ascend in natural order: binary search on them */
static void test_sorted_lookups(void)
{
	static const char *const qs[] = {
		"SELECT * FROM @ev WHERE id = 5000",
		"SELECT * FROM @ev WHERE id > 99990",
		"SELECT count(*), sum(dur) FROM @ev WHERE id >= 100 AND id < 5000",
		"SELECT count(*), sum(dur) FROM @ev WHERE id <= 70000 AND id > 69000",
		"SELECT * FROM @ev WHERE ts = (SELECT ts FROM @ev WHERE id = 777)",
		"SELECT count(*), sum(id) FROM @ev WHERE ts > 20000000 AND ts <= 30000000",
		"SELECT count(*), sum(id) FROM @ev WHERE ts < 2000000",
		"SELECT count(*) FROM @ev WHERE ts >= 1000000",
		"SELECT count(*) FROM @ev WHERE id > 10 AND id > 20 AND id < 90 AND id < 80",
		"SELECT utid, tid FROM @thr WHERE utid = 42",
		"SELECT * FROM @thr WHERE utid BETWEEN 10 AND 20",
	};
	compare_all(qs, sizeof(qs) / sizeof(qs[0]));
}

/* utid, dur, arg_set_id, cpu do not: their index, made on first use */
static void test_unsorted_lookups(void)
{
	static const char *const qs[] = {
		"SELECT * FROM @ev WHERE arg_set_id = 1234 ORDER BY id",
		"SELECT count(*), sum(id) FROM @ev WHERE utid = 7",
		"SELECT count(*), sum(id) FROM @ev WHERE utid >= 90",
		"SELECT count(*), sum(id) FROM @ev WHERE dur < 0",
		"SELECT count(*), sum(id) FROM @ev WHERE dur > 100 AND dur <= 200",
		"SELECT count(*), sum(id) FROM @ev WHERE cpu = 3 AND dur > 4000",
		"SELECT count(*), sum(id) FROM @ev WHERE utid IN (1, 5, 9)",
		"SELECT count(*), sum(id) FROM @ev WHERE utid = 7 AND ts > 20000000 AND ts < 40000000",
		"SELECT count(*), sum(id) FROM @ev WHERE utid = 7 AND id >= 50000",
		"SELECT count(*), sum(id) FROM @ev WHERE utid = 7 AND rowid < 50000",
		"SELECT count(*) FROM @ev WHERE utid < 1000",
	};
	compare_all(qs, sizeof(qs) / sizeof(qs[0]));
}

/* an INTEGER column against reals, texts, NULL and the extremes, as
 * SQLite compares them */
static void test_mixed_comparisons(void)
{
	static const char *const qs[] = {
		"SELECT count(*) FROM @ev WHERE utid = 7.0",
		"SELECT count(*) FROM @ev WHERE utid = 7.5",
		"SELECT count(*) FROM @ev WHERE utid > 7.5",
		"SELECT count(*) FROM @ev WHERE utid >= 7.5",
		"SELECT count(*) FROM @ev WHERE utid < 7.5",
		"SELECT count(*) FROM @ev WHERE utid <= -0.5",
		"SELECT count(*) FROM @ev WHERE utid = '7'",
		"SELECT count(*) FROM @ev WHERE utid > '7.5'",
		"SELECT count(*) FROM @ev WHERE utid < 'abc'",
		"SELECT count(*) FROM @ev WHERE utid > 'abc'",
		"SELECT count(*) FROM @ev WHERE utid = 'abc'",
		"SELECT count(*) FROM @ev WHERE utid <= x'00'",
		"SELECT count(*) FROM @ev WHERE utid = NULL",
		"SELECT count(*) FROM @ev WHERE utid > NULL",
		"SELECT count(*) FROM @ev WHERE id < 9.3e18",
		"SELECT count(*) FROM @ev WHERE id > -9.3e18",
		"SELECT count(*) FROM @ev WHERE id > 9223372036854775807",
		"SELECT count(*) FROM @ev WHERE id >= -9223372036854775808",
		"SELECT count(*) FROM @ev WHERE id < -9223372036854775808",
		"SELECT count(*) FROM @ev WHERE ts > 5.0e6 AND ts < 1e7",
		"SELECT count(*) FROM @ev WHERE dur > 1e300",
		"SELECT count(*) FROM @ev WHERE dur < 1e300",
		"SELECT count(*) FROM @ev WHERE dur >= -1e300",
	};
	struct qy_store *s = make_store(NROWS);
	sqlite3 *db = open_db(s, 1);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		CHECK(compare_query(db, qs[i], NULL) == 1);
	/* the answers are not all alike: the list tests something */
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = '7'") > 0);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid < 'abc'") > 0);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7.5") == 0);
	sqlite3_close(db);
	qy_store_free(s);
}

/*
 * Joins answer the same, and through the indexes: far fewer VM steps
 * than the product of the tables' rows (a nested full scan).
 */
static void test_joins(void)
{
	static const char *const qs[] = {
		"SELECT count(*), sum(e.id), sum(t.tid) FROM @ev e JOIN @thr t USING (utid)",
		"SELECT t.name, count(*) FROM @ev e JOIN @thr t USING (utid) GROUP BY t.utid",
		"SELECT e.id, a.id FROM @ev e JOIN @ev a ON a.arg_set_id = e.id WHERE e.id < 300 "
		"ORDER BY e.id, a.id",
		"SELECT t.utid, (SELECT count(*) FROM @ev e WHERE e.utid = t.utid AND e.ts < 30000000 "
		"AND e.ts + e.dur > 20000000) FROM @thr t ORDER BY t.utid",
		"SELECT e.id, t.tid FROM @thr t JOIN @ev e ON e.utid = t.utid AND e.ts > t.tid * 10000 "
		"WHERE t.utid < 5 ORDER BY e.id",
	};
	struct qy_store *s = make_store(NROWS);
	sqlite3 *db = open_db(s, 1);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t steps = 0;
		CHECKF(compare_query(db, qs[i], &steps) > 0, "%s", qs[i]);
		CHECKF(steps < (uint64_t)NROWS * 40, "%s: %" PRIu64 " VM steps", qs[i], steps);
	}
	/* one lookup: a few steps, not a scan of the table (3 or more a row) */
	uint64_t steps = 0;
	CHECK(compare_query(db, "SELECT * FROM @ev WHERE arg_set_id = 99", &steps) > 0);
	CHECKF(steps < 1000, "%" PRIu64 " VM steps", steps);
	CHECK(compare_query(db,
			    "SELECT * FROM @ev WHERE utid = 3 AND ts > 20000000 AND ts < 21000000",
			    &steps) > 0);
	CHECKF(steps < 1000, "%" PRIu64 " VM steps", steps);
	sqlite3_close(db);
	qy_store_free(s);
}

/* The VM steps of one run of sql with ?1 bound to value; its rows in *rows. */
static uint64_t steps_bound(sqlite3 *db, const char *sql, int64_t value, uint64_t *rows)
{
	sqlite3_stmt *st = prepare(db, sql);
	*rows = 0;
	sqlite3_bind_int64(st, 1, value);
	while (sqlite3_step(st) == SQLITE_ROW)
		(*rows)++;
	uint64_t steps = (uint64_t)sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0);
	sqlite3_finalize(st);
	return steps;
}

/*
 * A literal on a column without an index yet: one scan (making the index
 * would cost more than the scan). A parameter, as a join's inner loop
 * has: the index, made once, then lookups; and the literal uses it then.
 */
static void test_index_when_it_pays(void)
{
	struct qy_store *s = make_store(NROWS);
	struct qy_table *ev = qy_table_find(s, "ev");
	sqlite3 *db = open_db(s, 0);
	uint64_t rows, want = 0;
	for (uint64_t r = 0; r < NROWS; r++)
		want += qy_i64(ev, 4)[r] == 99;
	CHECK(want > 0);
	uint64_t steps = steps_bound(db, "SELECT * FROM temp.ev WHERE arg_set_id = 99", 0, &rows);
	CHECK_EQ_U64(rows, want);
	CHECKF(steps > NROWS, "%" PRIu64 " VM steps", steps);
	CHECK(ev->cols[4].perm == NULL);
	steps = steps_bound(db, "SELECT * FROM temp.ev WHERE arg_set_id = ?1", 99, &rows);
	CHECK_EQ_U64(rows, want);
	CHECKF(steps < 1000, "%" PRIu64 " VM steps", steps);
	CHECK(ev->cols[4].perm != NULL);
	steps = steps_bound(db, "SELECT * FROM temp.ev WHERE arg_set_id = 99", 0, &rows);
	CHECK_EQ_U64(rows, want);
	CHECKF(steps < 1000, "%" PRIu64 " VM steps", steps);
	sqlite3_close(db);
	qy_store_free(s);
}

/* A random literal for a comparison with an integer column: mostly
 * integers near its values, some reals, texts, NULL. */
static void random_literal(sqlite3_str *q, int64_t lo, int64_t hi)
{
	uint32_t k = rng() % 20;
	int64_t span = hi - lo + 1, x = lo + (int64_t)(rng() % (uint32_t)span);
	if (k < 13)
		sqlite3_str_appendf(q, "%lld", (long long)x);
	else if (k < 16)
		sqlite3_str_appendf(q, "%lld.5", (long long)x);
	else if (k < 17)
		sqlite3_str_appendf(q, "'%lld'", (long long)x);
	else if (k < 18)
		sqlite3_str_appendf(q, "'x%lld'", (long long)x);
	else if (k < 19)
		sqlite3_str_appendf(q, "NULL");
	else
		sqlite3_str_appendf(q, "%lld", (long long)(rng() % 2 ? INT64_MAX : -INT64_MAX));
}

/*
 * Random conjunctions of comparisons on the integer columns (sorted and
 * not), with random orders and limits: the same rows, in the
 * same order, as the native copy. The order ends with id, so that it is
 * total.
 */
static void test_random_predicates(void)
{
	static const char *const cols[] = {"id", "ts", "utid", "dur", "arg_set_id", "cpu", "rowid"};
	static const int64_t lo[] = {-5, 999000, -2, -120, -2, -1, -5};
	static const int64_t hi[] = {NROWS + 5,     40000000, NTHREADS + 2, 5100,
				     NROWS / 4 + 2, 9,        NROWS};
	static const char *const ops[] = {"=", "<", "<=", ">", ">=", "<>"};
	struct qy_store *s = make_store(NROWS);
	sqlite3 *db = open_db(s, 1);
	rng_state = 1234;
	for (int i = 0; i < CHECK_SCALE(300, 60); i++) {
		sqlite3_str *q = sqlite3_str_new(NULL);
		sqlite3_str_appendf(q, "SELECT id, utid, ts FROM @ev WHERE 1");
		for (uint32_t n = 1 + rng() % 3; n > 0; n--) {
			uint32_t c = rng() % 6;
			uint32_t kind = rng() % 10;
			sqlite3_str_appendf(q, " AND %s ", cols[c]);
			if (kind == 0) {
				sqlite3_str_appendf(q, "IN (");
				random_literal(q, lo[c], hi[c]);
				sqlite3_str_appendf(q, ", ");
				random_literal(q, lo[c], hi[c]);
				sqlite3_str_appendf(q, ")");
			} else if (kind == 1) {
				sqlite3_str_appendf(q, "BETWEEN ");
				random_literal(q, lo[c], hi[c]);
				sqlite3_str_appendf(q, " AND ");
				random_literal(q, lo[c], hi[c]);
			} else if (kind == 2) {
				sqlite3_str_appendf(q, "IS %sNULL", rng() % 2 ? "NOT " : "");
			} else {
				sqlite3_str_appendf(q, "%s ", ops[rng() % 6]);
				random_literal(q, lo[c], hi[c]);
			}
		}
		uint32_t o = rng() % 8;
		if (o < 6)
			sqlite3_str_appendf(q, " ORDER BY %s %s, id", cols[o],
					    rng() % 2 ? "DESC" : "");
		else
			sqlite3_str_appendf(q, " ORDER BY id");
		if (rng() % 3 == 0)
			sqlite3_str_appendf(q, " LIMIT %u", rng() % 50);
		char *sql = sqlite3_str_finish(q);
		CHECK(sql);
		compare_query(db, sql, NULL);
		sqlite3_free(sql);
	}
	sqlite3_close(db);
	qy_store_free(s);
}

/* Whether SQLite sorts for the query (a temp B-tree for ORDER BY/GROUP BY). */
static int sorts(sqlite3 *db, const char *q)
{
	char *sql = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", q);
	sqlite3_stmt *st = prepare(db, sql);
	int sorted = 0;
	while (sqlite3_step(st) == SQLITE_ROW)
		if (strstr((const char *)sqlite3_column_text(st, 3), "TEMP B-TREE"))
			sorted = 1;
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return sorted;
}

/*
 * The first rows by a column of wide values not indexed yet: one scan
 * into SQLite's heap of LIMIT rows (making the index would cost more);
 * the whole table in that order: the index, walked.
 */
static void test_limit_without_index(void)
{
	static const struct qy_coldef cols[] = {{"v", QY_INT}};
	struct qy_store *s = qy_store_new();
	struct qy_table *w = qy_table_add(s, "w", cols, 1);
	CHECK(w);
	rng_state = 7;
	for (int i = 0; i < NROWS; i++) {
		int64_t r = qy_row(w);
		qy_i64(w, 0)[r] = ((int64_t)rng() << 8) ^ rng();
	}
	sqlite3 *db = open_db(s, 1);
	CHECK(compare_query(db, "SELECT v FROM @w ORDER BY v DESC LIMIT 5", NULL) == 5);
	CHECK(w->cols[0].perm == NULL);
	CHECK(compare_query(db, "SELECT v FROM @w ORDER BY v DESC", NULL) == NROWS);
	CHECK(w->cols[0].perm != NULL);
	CHECK(!sorts(db, "SELECT v FROM temp.w ORDER BY v DESC LIMIT 5"));
	sqlite3_close(db);
	qy_store_free(s);
}

static void test_order_by(void)
{
	static const char *const walked[] = {
		"SELECT id, ts FROM @ev ORDER BY ts",
		"SELECT id, ts FROM @ev ORDER BY ts DESC",
		"SELECT id, utid FROM @ev ORDER BY utid",
		"SELECT id, utid FROM @ev ORDER BY utid DESC",
		"SELECT id, utid FROM @ev WHERE utid > 50 ORDER BY utid",
		"SELECT id, ts FROM @ev WHERE utid = 9 ORDER BY ts DESC",
		"SELECT id, ts FROM @ev WHERE utid = 9 AND ts > 3000000 ORDER BY ts",
		"SELECT id, utid, ts FROM @ev ORDER BY utid, ts",
		"SELECT id, dur FROM @ev WHERE dur BETWEEN 10 AND 20 ORDER BY dur DESC",
		"SELECT id FROM @ev ORDER BY rowid DESC",
	};
	struct qy_store *s = make_store(NROWS);
	sqlite3 *db = open_db(s, 1);
	/* every one of these walks its order instead of sorting; with id
	 * last, the order is total and compares exactly */
	for (size_t i = 0; i < sizeof(walked) / sizeof(walked[0]); i++) {
		char *qv = with_schema(walked[i], "temp");
		char *q = sqlite3_mprintf("%s, id", walked[i]);
		CHECKF(!sorts(db, qv), "%s sorts", qv);
		CHECKF(compare_query(db, q, NULL) > 0, "%s", q);
		sqlite3_free(q);
		sqlite3_free(qv);
	}
	CHECK(!sorts(db, "SELECT utid, count(*) FROM temp.ev GROUP BY utid"));
	/* ties in the order column come in natural order (the index is stable) */
	CHECK(compare_query(db, "SELECT id FROM @ev WHERE utid = 11 ORDER BY utid", NULL) > 0);
	/* and not walked: a text column, a real one, a mix of directions */
	CHECK(sorts(db, "SELECT * FROM temp.ev ORDER BY name"));
	CHECK(sorts(db, "SELECT * FROM temp.ev ORDER BY val"));
	CHECK(sorts(db, "SELECT * FROM temp.ev ORDER BY utid, ts DESC"));
	CHECK(compare_query(db, "SELECT id FROM @ev ORDER BY utid, ts DESC, id", NULL) == NROWS);
	CHECK(compare_query(db, "SELECT id FROM @ev ORDER BY name, val, id", NULL) == NROWS);
	/* values of an IN come one filter each: SQLite sorts them together */
	CHECK(compare_query(db, "SELECT id FROM @ev WHERE utid IN (9, 3) ORDER BY ts, id", NULL) >
	      0);
	CHECK(compare_query(db, "SELECT id FROM @ev WHERE utid IN (9, 3) ORDER BY utid DESC, id",
			    NULL) > 0);
	sqlite3_close(db);
	qy_store_free(s);
}

static void test_group_by(void)
{
	static const char *const qs[] = {
		"SELECT utid, count(*), sum(dur), min(ts), max(ts) FROM @ev GROUP BY utid",
		"SELECT cpu, count(*), sum(dur) FROM @ev GROUP BY cpu ORDER BY cpu DESC",
		"SELECT name, count(*), sum(dur) FROM @ev GROUP BY name",
		"SELECT utid, cpu, count(*) FROM @ev GROUP BY utid, cpu",
		"SELECT ts / 1000000, count(*) FROM @ev GROUP BY 1",
		"SELECT DISTINCT utid FROM @ev ORDER BY utid",
	};
	compare_all(qs, sizeof(qs) / sizeof(qs[0]));
}

/* NULL, NaN and string id 0 read back as SQL NULL; values exact */
static void test_values(void)
{
	struct qy_store *s = make_store(1000);
	struct qy_table *ev = qy_table_find(s, "ev");
	sqlite3 *db = open_db(s, 0);
	sqlite3_stmt *st = prepare(db, "SELECT utid, dur, val, name, rowid FROM temp.ev");
	uint64_t r = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t utid = qy_i64(ev, 2)[r];
		double val = qy_f64(ev, 5)[r];
		uint32_t name = qy_sid(ev, 6)[r];
		CHECK((sqlite3_column_type(st, 0) == SQLITE_NULL) == (utid == QY_NULL_INT));
		if (utid != QY_NULL_INT)
			CHECK(sqlite3_column_int64(st, 0) == utid);
		CHECK((sqlite3_column_type(st, 2) == SQLITE_NULL) == (isnan(val) != 0));
		if (!isnan(val))
			CHECK(sqlite3_column_double(st, 2) == val);
		CHECK((sqlite3_column_type(st, 3) == SQLITE_NULL) == (name == 0));
		if (name) {
			size_t len;
			const char *p = qy_str_get(s, name, &len);
			CHECK((size_t)sqlite3_column_bytes(st, 3) == len);
			CHECK(memcmp(sqlite3_column_text(st, 3), p, len) == 0);
		}
		CHECK(sqlite3_column_int64(st, 4) == (int64_t)r);
		r++;
	}
	CHECK_EQ_U64(r, 1000);
	sqlite3_finalize(st);
	sqlite3_close(db);
	qy_store_free(s);
}

/* A table and a column named with quotes and SQL are data: queryable by
 * their quoted names, and nothing else changed. */
static void test_hostile_names(void)
{
	struct qy_store *s = make_store(1000);
	sqlite3 *db = open_db(s, 1);
	CHECK(one_int(db, "SELECT count(*) FROM temp.\"x\"\"; DROP TABLE ev; --'\"") == 10);
	CHECK(one_int(db, "SELECT sum(\"a\"\"b; c\") FROM temp.\"x\"\"; DROP TABLE ev; --'\"") ==
	      45);
	CHECK(one_int(db, "SELECT sum(\"a\"\"b; c\") FROM main.\"x\"\"; DROP TABLE ev; --'\"") ==
	      45);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev") == 1000);
	CHECK(one_int(db, "SELECT count(*) FROM main.ev") == 1000);
	CHECK(compare_query(db, "SELECT \"select\" FROM @\"x\"\"; DROP TABLE ev; --'\"", NULL) ==
	      10);
	char *q = sqlite3_mprintf(
		"SELECT count(*) FROM pragma_table_info(%Q, 'temp') WHERE name = %Q", HOSTILE_TABLE,
		HOSTILE_COL);
	CHECK(one_int(db, q) == 1);
	sqlite3_free(q);
	sqlite3_close(db);
	qy_store_free(s);
}

/* Names of any length: a table and a column of 5000 bytes, quotes in them */
static void test_long_names(void)
{
	char name[5001], col[5001];
	for (int i = 0; i < 5000; i++) {
		name[i] = i % 100 == 7 ? '"' : 'a' + i % 26;
		col[i] = i % 100 == 9 ? '"' : 'A' + i % 26;
	}
	name[5000] = col[5000] = 0;
	struct qy_coldef cols[] = {{col, QY_INT}};
	struct qy_store *s = qy_store_new();
	struct qy_table *t = qy_table_add(s, name, cols, 1);
	CHECK(t);
	int64_t r = qy_row(t);
	qy_i64(t, 0)[r] = 41;
	sqlite3 *db = open_db(s, 1);
	char *q = sqlite3_mprintf("SELECT \"%w\" + 1 FROM temp.\"%w\"", col, name);
	CHECK(one_int(db, q) == 42);
	sqlite3_free(q);
	q = sqlite3_mprintf("SELECT \"%w\" + 1 FROM main.\"%w\"", col, name);
	CHECK(one_int(db, q) == 42);
	sqlite3_free(q);
	sqlite3_close(db);
	qy_store_free(s);
}

/* Rows appended or cleared after a statement ran are seen by the next,
 * its indexes made again. */
static void test_rows_changed(void)
{
	struct qy_store *s = make_store(1000);
	struct qy_table *ev = qy_table_find(s, "ev");
	sqlite3 *db = open_db(s, 0);
	int64_t before = one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7");
	CHECK(before > 0);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE ts > 0") == 1000);
	for (int i = 0; i < 5; i++) {
		int64_t r = qy_row(ev);
		qy_i64(ev, 0)[r] = r;
		qy_i64(ev, 1)[r] = 1; /* ts no longer ascending */
		qy_i64(ev, 2)[r] = 7;
	}
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7") == before + 5);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE ts > 0") == 1005);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE ts < 2") == 5);
	qy_table_clear(ev);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7") == 0);
	int64_t r = qy_row(ev);
	qy_i64(ev, 2)[r] = 7;
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7") == 1);
	CHECK(one_int(db, "SELECT rowid FROM temp.ev WHERE utid = 7") == 1005);
	/* a value changed in place: seen after qy_table_changed */
	qy_i64(ev, 2)[r] = 8;
	qy_table_changed(ev);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 8") == 1);
	sqlite3_close(db);
	qy_store_free(s);
}

/*
 * minv: id (ascending), asc (ascending: NULLs, then values INT64_MIN, then
 * values), bad (ascending by raw value, but a NULL after a value INT64_MIN:
 * not in SQL's order), mix (random: NULL, the value INT64_MIN, -2..5),
 * low (NULL or the value INT64_MIN, in turn).
 */
static struct qy_store *make_minval_store(uint64_t nrows)
{
	static const struct qy_coldef cols[] = {
		{"id", QY_INT}, {"asc", QY_INT}, {"bad", QY_INT}, {"mix", QY_INT}, {"low", QY_INT}};
	struct qy_store *s = qy_store_new();
	CHECK(s);
	struct qy_table *t = qy_table_add(s, "minv", cols, 5);
	CHECK(t);
	rng_state = 7;
	/* (marked out of order, as qy_i64_min allows: from the last row back) */
	for (uint64_t i = 0; i < nrows; i++) {
		int64_t r = qy_row(t);
		CHECK(r == (int64_t)i);
		qy_i64(t, 0)[r] = r;
		if (i >= nrows / 4)
			qy_i64(t, 1)[r] = (int64_t)i;
		if (i >= nrows / 4 + 3)
			qy_i64(t, 2)[r] = (int64_t)i;
		uint32_t k = rng() % 10;
		if (k >= 1)
			qy_i64(t, 3)[r] = (int64_t)k - 4; /* -3 made INT64_MIN below */
	}
	for (uint64_t i = nrows; i-- > 0;) {
		if (i >= nrows / 8 && i < nrows / 4)
			CHECK(qy_i64_min(t, 1, i) == 0);
		if (i == nrows / 4 || i == nrows / 4 + 2)
			CHECK(qy_i64_min(t, 2, i) == 0);
		if (qy_i64(t, 3)[i] == -3)
			CHECK(qy_i64_min(t, 3, i) == 0);
		if (i % 2)
			CHECK(qy_i64_min(t, 4, i) == 0);
	}
	/* marking a row twice keeps one mark */
	CHECK(qy_i64_min(t, 4, 1) == 0);
	CHECK(t->cols[4].nvmin == nrows / 2);
	return s;
}

/* Each row reads back as stored: NULL where NULL, -9223372036854775808
 * where the value was marked. */
static void test_int64_min_read_back(void)
{
	struct qy_store *s = make_minval_store(1000);
	sqlite3 *db = open_db(s, 0);
	sqlite3_stmt *st = prepare(db, "SELECT low, low IS NULL, typeof(low) FROM temp.minv");
	uint64_t r = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int value = r % 2 == 1;
		CHECKF(sqlite3_column_int(st, 1) == !value, "row %" PRIu64, r);
		CHECK(strcmp((const char *)sqlite3_column_text(st, 2),
			     value ? "integer" : "null") == 0);
		if (value)
			CHECK(sqlite3_column_int64(st, 0) == INT64_MIN);
		r++;
	}
	CHECK_EQ_U64(r, 1000);
	sqlite3_finalize(st);
	CHECK(one_int(db, "SELECT count(*) FROM temp.minv WHERE low IS NULL") == 500);
	CHECK(one_int(db, "SELECT count(low) FROM temp.minv") == 500);
	sqlite3_close(db);
	qy_store_free(s);
}

/* Lookups, ranges, IS NULL and orders on columns holding NULLs and the
 * value INT64_MIN answer as SQLite does on the native copy (NULL first,
 * then INT64_MIN), through every plan: binary search on a sorted column,
 * the index of an unsorted one, a column sorted by raw value only. */
static void test_int64_min_lookups(void)
{
	static const char *const qs[] = {
		"SELECT id FROM @minv WHERE asc = -9223372036854775808 ORDER BY id",
		"SELECT id FROM @minv WHERE asc <= -9223372036854775808 ORDER BY id",
		"SELECT id FROM @minv WHERE asc < -9223372036854775807 ORDER BY id",
		"SELECT id FROM @minv WHERE asc >= -9223372036854775808 AND asc < 2600 ORDER BY id",
		"SELECT id FROM @minv WHERE asc > -9223372036854775808 AND asc < 2600 ORDER BY id",
		"SELECT id FROM @minv WHERE asc < 2600 ORDER BY id",
		"SELECT id FROM @minv WHERE asc IS NULL ORDER BY id",
		"SELECT id FROM @minv WHERE asc IS NOT NULL AND asc < 2600 ORDER BY id",
		"SELECT id, asc FROM @minv ORDER BY asc, id",
		"SELECT id, asc FROM @minv ORDER BY asc DESC, id DESC",
		"SELECT id FROM @minv WHERE bad = -9223372036854775808 ORDER BY id",
		"SELECT id FROM @minv WHERE bad < 0 ORDER BY id",
		"SELECT id, bad FROM @minv ORDER BY bad, id",
		"SELECT id, bad FROM @minv ORDER BY bad DESC, id DESC",
		"SELECT id FROM @minv WHERE mix = -9223372036854775808 ORDER BY id",
		"SELECT id FROM @minv WHERE mix = ?1",
		"SELECT id FROM @minv WHERE mix <= ?1",
		"SELECT id FROM @minv WHERE mix < ?2",
		"SELECT id FROM @minv WHERE mix > ?1",
		"SELECT id FROM @minv WHERE mix BETWEEN ?1 AND ?2",
		"SELECT id FROM @minv WHERE asc <= ?1",
		"SELECT id FROM @minv WHERE asc BETWEEN ?1 AND ?2",
		"SELECT id FROM @minv WHERE mix <= -9223372036854775808.0 ORDER BY id",
		"SELECT id FROM @minv WHERE mix < 0 ORDER BY id",
		"SELECT id FROM @minv WHERE mix BETWEEN -9223372036854775808 AND 1 ORDER BY id",
		"SELECT id FROM @minv WHERE mix > -9223372036854775808 ORDER BY id",
		"SELECT id FROM @minv WHERE mix IS NULL ORDER BY id",
		"SELECT id, mix FROM @minv ORDER BY mix, id",
		"SELECT id, mix FROM @minv ORDER BY mix DESC, id DESC",
		"SELECT mix, count(*) FROM @minv GROUP BY mix",
		"SELECT id FROM @minv WHERE mix = -9223372036854775808 AND id < 500 ORDER BY id",
		"SELECT id FROM @minv WHERE low = -9223372036854775808 ORDER BY id DESC",
		"SELECT id, low FROM @minv ORDER BY low, id",
		"SELECT x.id, y.id FROM @minv x, @minv y WHERE x.mix = y.low AND x.id < 40 ORDER BY 1, 2",
	};
	struct qy_store *s = make_minval_store(NROWS / 10);
	sqlite3 *db = open_db(s, 1);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		if (strchr(qs[i], '?')) {
			/* values known only when running (?1 INT64_MIN, ?2 2600): the
			 * index made for them; the rows' count and ids' sum compared */
			int64_t got[2][2];
			for (int w = 0; w < 2; w++) {
				char *q = with_schema(qs[i], w ? "main" : "temp");
				char *agg = sqlite3_mprintf("SELECT count(*), sum(id) FROM (%s)",
							    q);
				sqlite3_stmt *st = prepare(db, agg);
				sqlite3_bind_int64(st, 1, INT64_MIN);
				sqlite3_bind_int64(st, 2, 2600);
				CHECK(sqlite3_step(st) == SQLITE_ROW);
				got[w][0] = sqlite3_column_int64(st, 0);
				got[w][1] = sqlite3_column_int64(st, 1);
				sqlite3_finalize(st);
				sqlite3_free(agg);
				sqlite3_free(q);
			}
			CHECKF(got[0][0] > 0 && got[0][0] == got[1][0] && got[0][1] == got[1][1],
			       "%s: vtab %lld rows (ids %lld), native %lld (%lld)", qs[i],
			       (long long)got[0][0], (long long)got[0][1], (long long)got[1][0],
			       (long long)got[1][1]);
			continue;
		}
		uint64_t rows = compare_query(db, qs[i], NULL);
		CHECKF(rows > 0, "%s: no rows, nothing compared", qs[i]);
	}
	/* the column in SQL's order is known sorted (binary searches on it);
	 * the one sorted by raw value only is not */
	struct qy_table *t = qy_table_find(s, "minv");
	CHECK(!sorts(db, "SELECT id FROM temp.minv ORDER BY asc"));
	CHECK(t->cols[1].sorted == 1 && t->cols[2].sorted == 0);
	sqlite3_close(db);
	qy_store_free(s);
}

/* A table cleared forgets its marks: a new row's INT64_MIN is NULL. */
static void test_int64_min_marks_cleared(void)
{
	struct qy_store *s = make_minval_store(100);
	struct qy_table *t = qy_table_find(s, "minv");
	sqlite3 *db = open_db(s, 0);
	CHECK(one_int(db, "SELECT count(*) FROM temp.minv WHERE low IS NULL") == 50);
	qy_table_clear(t);
	for (int i = 0; i < 4; i++)
		CHECK(qy_row(t) == i);
	CHECK(one_int(db, "SELECT count(*) FROM temp.minv WHERE low IS NULL") == 4);
	CHECK(qy_i64_min(t, 4, 3) == 0);
	CHECK(one_int(db, "SELECT count(*) FROM temp.minv WHERE low IS NULL") == 3);
	sqlite3_close(db);
	qy_store_free(s);
}

/* The tables are read-only, and made only by ringtrace, in temp. */
static void test_readonly(void)
{
	static const char *const refused[] = {
		"INSERT INTO temp.ev(id) VALUES (1)",
		"UPDATE temp.ev SET dur = 0",
		"DELETE FROM temp.thr",
		"CREATE VIRTUAL TABLE main.y USING ringtrace(0)",
		"CREATE VIRTUAL TABLE temp.y USING ringtrace(99)",
		"CREATE VIRTUAL TABLE temp.y USING ringtrace(-1)",
		"CREATE VIRTUAL TABLE temp.y USING ringtrace(1x)",
		"CREATE VIRTUAL TABLE temp.y USING ringtrace",
	};
	struct qy_store *s = make_store(100);
	sqlite3 *db = open_db(s, 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		CHECKF(sqlite3_exec(db, refused[i], NULL, NULL, NULL) != SQLITE_OK, "%s",
		       refused[i]);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev") == 100);
	CHECK(one_int(db, "SELECT count(*) FROM temp.thr") == NTHREADS);
	sqlite3_close(db);
	qy_store_free(s);
}

/* --db chunk by chunk: append, tables seen late made then */
static void test_copy_chunks(void)
{
	static const struct qy_coldef late_cols[] = {{"v", QY_INT}};
	struct qy_store *s = make_store(1000);
	struct qy_table *ev = qy_table_find(s, "ev");
	sqlite3 *db = open_db(s, 0);
	char err[256];
	CHECKF(qy_sqlite_copy(db, s, "main", 1, err, sizeof(err)) == 0, "%s", err);
	int64_t sum1 = one_int(db, "SELECT sum(id) FROM temp.ev");
	qy_table_clear(ev);
	for (int i = 0; i < 10; i++) {
		int64_t r = qy_row(ev);
		qy_i64(ev, 0)[r] = 5000 + i;
	}
	struct qy_table *late = qy_table_add(s, "late", late_cols, 1);
	CHECK(late);
	int64_t r = qy_row(late);
	qy_i64(late, 0)[r] = 17;
	CHECKF(qy_sqlite_copy(db, s, "main", 0, err, sizeof(err)) == 0, "%s", err);
	CHECK(one_int(db, "SELECT count(*) FROM main.ev") == 1010);
	CHECK(one_int(db, "SELECT sum(id) FROM main.ev") == sum1 + 50045);
	CHECK(one_int(db, "SELECT v FROM main.late") == 17);
	CHECK(one_int(db, "SELECT v FROM temp.late") == 17);
	/* create again: the tables are there, an error, nothing copied */
	CHECK(qy_sqlite_copy(db, s, "main", 1, err, sizeof(err)) == -1);
	CHECKF(strstr(err, "already exists"), "%s", err);
	CHECK(one_int(db, "SELECT count(*) FROM main.ev") == 1010);
	CHECK(qy_sqlite_copy(db, s, "nosuch", 1, err, sizeof(err)) == -1);
	sqlite3_close(db);
	qy_store_free(s);
}

/* ---- the lockdown ---- */

static sqlite3 *locked_db(struct qy_store **ps)
{
	*ps = make_store(100);
	sqlite3 *db = open_db(*ps, 0);
	CHECK(qy_sqlite_lockdown(db) == 0);
	return db;
}

static void refused(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	CHECKF(sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK, "%s ran", sql);
	CHECKF(msg && (strstr(msg, "not authorized") || strstr(msg, "authorization denied")),
	       "%s: %s", sql, msg ? msg : "(no message)");
	sqlite3_free(msg);
}

static void test_lockdown_files(void)
{
	struct qy_store *s;
	sqlite3 *db = locked_db(&s);
	char dir[] = "/tmp/rt_query_vtab_XXXXXX";
	CHECK(mkdtemp(dir));
	char *x = sqlite3_mprintf("%s/x", dir);
	char *q = sqlite3_mprintf("VACUUM INTO '%q'", x);
	refused(db, q);
	sqlite3_free(q);
	q = sqlite3_mprintf("ATTACH '%q' AS y", x);
	refused(db, q);
	sqlite3_free(q);
	q = sqlite3_mprintf("ATTACH 'file:%q?mode=rwc' AS y", x);
	refused(db, q);
	sqlite3_free(q);
	refused(db, "DETACH temp");
	struct stat st;
	CHECKF(lstat(x, &st) == -1 && errno == ENOENT, "%s was written", x);
	CHECK(rmdir(dir) == 0);
	sqlite3_free(x);
	sqlite3_close(db);
	qy_store_free(s);
}

static void test_lockdown_extensions(void)
{
	struct qy_store *s;
	sqlite3 *db = locked_db(&s);
	refused(db, "SELECT load_extension('/nonexistent/x')");
	refused(db, "SELECT load_extension('x', 'y')");
	char *msg = NULL;
	CHECK(sqlite3_load_extension(db, "/nonexistent/x", NULL, &msg) != SQLITE_OK);
	CHECKF(msg && strstr(msg, "not authorized"), "%s", msg ? msg : "(no message)");
	sqlite3_free(msg);
	/* the shell's file modules are not in the library */
	CHECK(sqlite3_exec(db, "SELECT * FROM fsdir('/')", NULL, NULL, NULL) != SQLITE_OK);
	sqlite3_close(db);
	qy_store_free(s);
}

/* fts3_tokenizer gives a pointer of the process, or takes one as code */
static void test_lockdown_fts3_tokenizer(void)
{
	struct qy_store *s;
	sqlite3 *db = locked_db(&s);
	refused(db, "SELECT fts3_tokenizer('simple')");
	refused(db, "SELECT fts3_tokenizer('x', x'0000000000000000')");
	CHECK(sqlite3_exec(db, "CREATE VIRTUAL TABLE temp.f USING fts4(t)", NULL, NULL, NULL) ==
	      SQLITE_OK);
	refused(db, "SELECT fts3_tokenizer('simple') FROM temp.f");
	sqlite3_close(db);
	qy_store_free(s);
}

static void test_lockdown_pragmas(void)
{
	static const char *const denied[] = {
		"PRAGMA writable_schema = 1", "PRAGMA trusted_schema = 1",
		"PRAGMA journal_mode = WAL",  "PRAGMA temp_store_directory = '/tmp'",
		"PRAGMA schema_version = 5",  "PRAGMA optimize",
		"PRAGMA writable_schema",     "SELECT * FROM pragma_writable_schema",
		"PRAGMA user_version = 3",    "PRAGMA application_id = 3",
		"PRAGMA shrink_memory",       "PRAGMA case_sensitive_like = 1",
	};
	static const char *const allowed[] = {
		"PRAGMA table_info(ev)",
		"PRAGMA temp.table_xinfo('x\"; DROP TABLE ev; --''')",
		"SELECT * FROM pragma_table_list",
		"PRAGMA index_list(ev)",
		"PRAGMA function_list",
		"SELECT name FROM pragma_module_list",
		"PRAGMA compile_options",
		"PRAGMA database_list",
		"PRAGMA user_version",
		"SELECT * FROM pragma_application_id",
		"PRAGMA quick_check",
	};
	struct qy_store *s;
	sqlite3 *db = locked_db(&s);
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		refused(db, denied[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		char *msg = NULL;
		CHECKF(sqlite3_exec(db, allowed[i], NULL, NULL, &msg) == SQLITE_OK, "%s: %s",
		       allowed[i], msg);
	}
	CHECK(one_int(db, "SELECT count(*) FROM pragma_table_info('ev', 'temp')") == 8);
	/* the tables still answer, and a new one attaches after the lockdown */
	static const struct qy_coldef late_cols[] = {{"v", QY_INT}};
	struct qy_table *late = qy_table_add(s, "late", late_cols, 1);
	char err[256];
	int64_t r = qy_row(late);
	qy_i64(late, 0)[r] = 3;
	CHECKF(qy_sqlite_attach_table(db, s, late, err, sizeof(err)) == 0, "%s", err);
	CHECK(one_int(db, "SELECT v FROM temp.late") == 3);
	CHECK(one_int(db, "SELECT count(*) FROM temp.ev WHERE utid = 7") ==
	      one_int(db, "SELECT count(*) FROM temp.ev WHERE utid + 0 = 7"));
	sqlite3_close(db);
	qy_store_free(s);
}

static const struct check_case cases[] = {
	CHECK_CASE(query_vtab_counts_and_sums_equal_native, test_counts_and_sums),
	CHECK_CASE(query_vtab_sorted_column_lookups_equal_native, test_sorted_lookups),
	CHECK_CASE(query_vtab_unsorted_column_lookups_equal_native, test_unsorted_lookups),
	CHECK_CASE(query_vtab_mixed_type_comparisons_equal_native, test_mixed_comparisons),
	CHECK_CASE(query_vtab_random_predicates_and_orders_equal_native, test_random_predicates),
	CHECK_CASE(query_vtab_joins_equal_native_through_indexes, test_joins),
	CHECK_CASE(query_vtab_index_made_for_parameters_not_one_literal, test_index_when_it_pays),
	CHECK_CASE(query_vtab_order_by_walked_without_sort_equals_native, test_order_by),
	CHECK_CASE(query_vtab_limit_on_wide_column_scans_not_indexes, test_limit_without_index),
	CHECK_CASE(query_vtab_group_by_equals_native, test_group_by),
	CHECK_CASE(query_vtab_nulls_nan_and_strings_read_back_exactly, test_values),
	CHECK_CASE(query_vtab_hostile_table_and_column_names_are_data, test_hostile_names),
	CHECK_CASE(query_vtab_int64_min_value_reads_back_not_null, test_int64_min_read_back),
	CHECK_CASE(query_vtab_int64_min_lookups_and_orders_equal_native, test_int64_min_lookups),
	CHECK_CASE(query_vtab_cleared_table_forgets_int64_min_marks, test_int64_min_marks_cleared),
	CHECK_CASE(query_vtab_names_of_any_length, test_long_names),
	CHECK_CASE(query_vtab_rows_appended_cleared_or_changed_are_seen, test_rows_changed),
	CHECK_CASE(query_vtab_tables_read_only_and_made_only_in_temp, test_readonly),
	CHECK_CASE(query_copy_appends_chunks_and_makes_late_tables, test_copy_chunks),
	CHECK_CASE(query_lockdown_refuses_attach_and_vacuum_into, test_lockdown_files),
	CHECK_CASE(query_lockdown_refuses_extension_loading, test_lockdown_extensions),
	CHECK_CASE(query_lockdown_refuses_fts3_tokenizer, test_lockdown_fts3_tokenizer),
	CHECK_CASE(query_lockdown_allows_listing_pragmas_only, test_lockdown_pragmas),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
