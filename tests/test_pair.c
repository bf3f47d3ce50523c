/*
 * The pairs statement (src/query/pair.c, pair_vtab.c) on tables made by
 * hand in SQLite, in the shape the import gives them (query_api.h:
 * event_table, event_column, thread, loss, one table per event), then
 * copied into a store as the import would fill it and queried through
 * its virtual tables and pairs(): which stop pairs with which start (the
 * most recent unpaired one, per key), the unpaired ones, groups, losses,
 * nearest-rank percentiles, names that try to be SQL, keys of several
 * types, and the pairing against a plain stack on random sequences.
 */
#include <sqlite3.h>

#include "check.h"
#include "query/query_api.h"
#include "ringtrace/error.h"

static void exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	CHECKF(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql,
	       msg ? msg : "?");
}

/* The store's type of column c of table t: text if a value is, else real
 * if a value is, else integer. */
static uint8_t col_type(sqlite3 *db, const char *t, const char *c)
{
	char *q = sqlite3_mprintf("SELECT max(typeof(\"%w\") = 'text'), max(typeof(\"%w\") = "
				  "'real') FROM \"%w\"",
				  c, c, t);
	sqlite3_stmt *st;
	CHECKF(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	uint8_t type = sqlite3_column_int(st, 0)   ? QY_TEXT
		       : sqlite3_column_int(st, 1) ? QY_REAL
						   : QY_INT;
	sqlite3_finalize(st);
	sqlite3_free(q);
	return type;
}

/* Table t of db copied into the store, rows in order. */
static void copy_table(sqlite3 *db, struct qy_store *s, const char *t)
{
	struct qy_coldef cols[16];
	char names[16][64];
	uint32_t n = 0;
	char *q = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q) ORDER BY cid", t);
	sqlite3_stmt *st;
	CHECK(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		CHECK(n < 16);
		snprintf(names[n], sizeof(names[n]), "%s", sqlite3_column_text(st, 0));
		cols[n] = (struct qy_coldef){names[n], col_type(db, t, names[n])};
		n++;
	}
	sqlite3_finalize(st);
	sqlite3_free(q);
	struct qy_table *tb = qy_table_add(s, t, cols, n);
	CHECK(tb);
	q = sqlite3_mprintf("SELECT * FROM \"%w\" ORDER BY rowid", t);
	CHECK(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t r = qy_row(tb);
		CHECK(r >= 0);
		for (uint32_t c = 0; c < n; c++) {
			if (sqlite3_column_type(st, (int)c) == SQLITE_NULL)
				continue;
			if (cols[c].type == QY_INT)
				qy_i64(tb, c)[r] = sqlite3_column_int64(st, (int)c);
			else if (cols[c].type == QY_REAL)
				qy_f64(tb, c)[r] = sqlite3_column_double(st, (int)c);
			else
				qy_sid(tb, c)[r] = qy_strz(
					s, (const char *)sqlite3_column_text(st, (int)c));
		}
	}
	sqlite3_finalize(st);
	sqlite3_free(q);
}

/* The tables of db (made by hand) as the import gives them: in a store,
 * as the virtual tables of a new connection, with pairs(). */
struct stored {
	struct qy_store *s;
	sqlite3 *db;
};

static struct stored stored_new(sqlite3 *raw)
{
	struct stored x = {qy_store_new(), NULL};
	CHECK(x.s);
	sqlite3_stmt *st;
	CHECK(sqlite3_prepare_v2(raw, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1,
				 &st, NULL) == SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		copy_table(raw, x.s, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	char err[256];
	CHECK(sqlite3_open(":memory:", &x.db) == SQLITE_OK);
	CHECKF(qy_sqlite_attach(x.db, x.s, err, sizeof(err)) == 0, "%s", err);
	return x;
}

static void stored_free(struct stored *x)
{
	sqlite3_close(x->db);
	qy_store_free(x->s);
}

/* A database with the catalogue, two threads, no loss, and the events
 * s (fields req, kind) and e (field req). */
static sqlite3 *db_new(void)
{
	sqlite3 *db;
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
	exec(db, "CREATE TABLE event_table(event, table_name, kind, fields, count);"
		 "CREATE TABLE event_column(table_name, field, column_name, type);"
		 "CREATE TABLE thread(utid, tid, name, upid, start_ts, end_ts);"
		 "CREATE TABLE loss(ts, upid, utid, stream, dropped, overrun);"
		 "INSERT INTO thread VALUES (1, 101, 'one', 1, 0, 0), (2, 102, 'two', 1, 0, 0);"
		 "CREATE TABLE s(id, ts, utid, cpu, req, kind);"
		 "CREATE TABLE e(id, ts, utid, cpu, req);"
		 "INSERT INTO event_table VALUES ('s', 's', 'event', 2, 0), ('e', 'e', 'event', 1, "
		 "0);"
		 "INSERT INTO event_column VALUES ('s', 'req', 'req', 'int'), ('s', 'kind', "
		 "'kind', 'string'), ('e', 'req', 'req', 'int');");
	return db;
}

/* The pairs of spec as text, by the id of their first event: "S>E" a
 * pair (its duration after ':'), "S>" a start never stopped, ">E" a stop
 * never started. The tables of raw, through the store and pairs(), by
 * the statement that qy_pair_sql gives. */
static const char *pairs_text(sqlite3 *raw, const struct qy_pair_spec *sp)
{
	static char out[8192];
	struct stored x = stored_new(raw);
	sqlite3 *db = x.db;
	char err[512], *sql, *q;
	int rc = qy_pair_sql(db, sp, &sql, err, sizeof(err));
	CHECKF(rc == 0, "qy_pair_sql: %d %s", rc, err);
	CHECK(asprintf(&q,
		       "SELECT id, stop_id, dur FROM (%s) ORDER BY coalesce(id, stop_id), stop_id",
		       sql) > 0);
	sqlite3_stmt *st;
	CHECKF(sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
	size_t o = 0;
	out[0] = 0;
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		char a[24] = "", b[24] = "", d[24] = "";
		if (sqlite3_column_type(st, 0) != SQLITE_NULL)
			snprintf(a, sizeof(a), "%lld", sqlite3_column_int64(st, 0));
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			snprintf(b, sizeof(b), "%lld", sqlite3_column_int64(st, 1));
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			snprintf(d, sizeof(d), ":%lld", sqlite3_column_int64(st, 2));
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s>%s%s", o ? " " : "", a, b, d);
		CHECK(o < sizeof(out));
	}
	CHECKF(step == SQLITE_DONE, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	free(q);
	free(sql);
	stored_free(&x);
	return out;
}

#define CHECK_PAIRS(db, sp, want)                                                             \
	do {                                                                                  \
		const char *got_ = pairs_text(db, sp);                                        \
		CHECKF(strcmp(got_, want) == 0, "pairs\n  got:  %s\n  want: %s", got_, want); \
	} while (0)

/* Nested starts in one thread close in reverse order; by thread (no key). */
static void nested_by_thread(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO s VALUES (1, 10, 1, 0, 7, 'a'), (2, 20, 1, 0, 8, 'a');"
		 "INSERT INTO e VALUES (3, 30, 1, 0, 8), (4, 45, 1, 0, 7);");
	struct qy_pair_spec sp = {.from = "s", .to = "e"};
	CHECK_PAIRS(db, &sp, "1>4:35 2>3:10");
	sqlite3_close(db);
}

/* A stop with nothing open, starts never stopped (the older one of two
 * open starts stays open: the stop takes the most recent). */
static void unpaired_counted(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO e VALUES (1, 5, 1, 0, 1);"
		 "INSERT INTO s VALUES (2, 10, 1, 0, 1, 'a'), (3, 20, 1, 0, 1, 'a');"
		 "INSERT INTO e VALUES (4, 30, 1, 0, 1);"
		 "INSERT INTO s VALUES (5, 40, 2, 0, 1, 'a');");
	struct qy_pair_spec sp = {.from = "s", .to = "e"};
	CHECK_PAIRS(db, &sp, ">1 2> 3>4:10 5>");
	struct qy_pairs p;
	char err[256];
	char *sql;
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == 0);
	struct stored x = stored_new(db);
	CHECK(qy_pairs_collect(x.db, &sp, 10, &p, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.npairs, 1);
	CHECK_EQ_U64(p.nstart_only, 2);
	CHECK_EQ_U64(p.nstop_only, 1);
	CHECK_EQ_U64(p.nstarts, 2);
	CHECK(p.starts[0].id == 2 && p.starts[1].id == 5);
	CHECK(p.starts[1].start_thread.tid == 102 &&
	      strcmp(p.starts[1].start_thread.name, "two") == 0);
	CHECK(p.nstops == 1 && p.stops[0].stop_id == 1 && p.stops[0].id == -1);
	CHECK(p.stops[0].stop_thread.tid == 101);
	qy_pairs_free(&p);
	stored_free(&x);
	free(sql);
	sqlite3_close(db);
}

/* By a key field: a start in one thread, its stop in another, requests
 * overlapping. */
static void by_key_across_threads(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO s VALUES (1, 10, 1, 0, 100, 'a'), (2, 11, 1, 0, 200, 'b');"
		 "INSERT INTO e VALUES (3, 15, 2, 0, 100), (4, 30, 2, 0, 200);");
	struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
	CHECK_PAIRS(db, &sp, "1>3:5 2>4:19");
	/* by thread the stops are another thread's: nothing pairs */
	struct qy_pair_spec bt = {.from = "s", .to = "e"};
	CHECK_PAIRS(db, &bt, "1> 2> >3 >4");
	sqlite3_close(db);
}

/* Same time: the event id (the trace's order) decides. */
static void same_time_by_id(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO e VALUES (1, 10, 1, 0, 1);"
		 "INSERT INTO s VALUES (2, 10, 1, 0, 1, 'a');"
		 "INSERT INTO e VALUES (3, 10, 1, 0, 1);");
	struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
	CHECK_PAIRS(db, &sp, ">1 2>3:0");
	sqlite3_close(db);
}

/* Groups by a field of the start, each with its latencies sorted, and the
 * longest pairs first. */
static void groups_sorted_with_top(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO s VALUES (1, 0, 1, 0, 1, 'b'), (3, 100, 1, 0, 2, 'a'),"
		 " (5, 200, 1, 0, 3, 'b'), (7, 300, 1, 0, 4, 'b'), (9, 400, 1, 0, 5, NULL);"
		 "INSERT INTO e VALUES (2, 30, 1, 0, 1), (4, 110, 1, 0, 2), (6, 210, 1, 0, 3),"
		 " (8, 350, 1, 0, 4), (10, 401, 1, 0, 5);");
	struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req", .by = "kind"};
	char err[256], *sql;
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == 0);
	struct qy_pairs p;
	struct stored x = stored_new(db);
	CHECK(qy_pairs_collect(x.db, &sp, 2, &p, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.ng, 3);
	CHECK(p.g[0].grp == NULL && p.g[0].n == 1 && p.g[0].lat[0] == 1);
	CHECK(strcmp(p.g[1].grp, "a") == 0 && p.g[1].n == 1);
	CHECK(strcmp(p.g[2].grp, "b") == 0 && p.g[2].n == 3);
	CHECK(p.g[2].lat[0] == 10 && p.g[2].lat[1] == 30 && p.g[2].lat[2] == 50);
	CHECK(p.g[2].ntop == 2 && p.g[2].top[0].dur == 50 && p.g[2].top[1].dur == 30);
	CHECK(p.g[2].top[0].id == 7 && p.g[2].top[0].stop_id == 8 && p.g[2].top[0].ts == 300);
	CHECK(strcmp(p.g[2].top[0].key, "4") == 0 && strcmp(p.g[2].top[0].grp, "b") == 0);
	CHECK(p.g[2].top[0].start_thread.tid == 101 && p.g[2].top[0].stop_thread.tid == 101);
	CHECK_EQ_U64(p.npairs, 5);
	qy_pairs_free(&p);
	stored_free(&x);
	free(sql);
	sqlite3_close(db);
}

/* Losses: a pair with one in its span, a start with one after it, a stop
 * with one before it. */
static void losses_marked(void)
{
	sqlite3 *db = db_new();
	exec(db, "INSERT INTO e VALUES (1, 5, 1, 0, 9);"
		 "INSERT INTO s VALUES (2, 10, 1, 0, 1, 'a'), (4, 30, 1, 0, 2, 'a'),"
		 " (6, 50, 1, 0, 3, 'a');"
		 "INSERT INTO e VALUES (3, 20, 1, 0, 1), (5, 41, 1, 0, 2);"
		 "INSERT INTO loss VALUES (35, 1, 1, 0, 3, 4), (3, 1, 1, 0, 1, NULL);");
	struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
	char err[256], *sql;
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == 0);
	struct qy_pairs p;
	struct stored x = stored_new(db);
	CHECK(qy_pairs_collect(x.db, &sp, 5, &p, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.loss_places, 2);
	CHECK_EQ_U64(p.lost_events, 8);
	CHECK_EQ_U64(p.g[0].lossy, 1); /* 4>5 spans 35; 2>3 spans none */
	CHECK(p.g[0].top[0].id == 4 && p.g[0].top[0].lossy && !p.g[0].top[1].lossy);
	CHECK_EQ_U64(p.start_lossy, 0); /* the start at 50: no loss after it */
	CHECK_EQ_U64(p.stop_lossy, 1);  /* the stop at 5: a loss at 3 */
	qy_pairs_free(&p);
	stored_free(&x);
	free(sql);
	sqlite3_close(db);
}

/* Unknown events and fields: ENOENT, and the message names what there is. */
static void unknown_names_said(void)
{
	sqlite3 *db = db_new();
	char err[512], *sql;
	struct qy_pair_spec sp = {.from = "nope", .to = "e"};
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == -RINGTRACE_ENOENT);
	CHECKF(strstr(err, "no event 'nope'") && strstr(err, "its events: e, s"), "%s", err);
	sp = (struct qy_pair_spec){.from = "s", .to = "e", .key = "kind"};
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == -RINGTRACE_ENOENT);
	CHECKF(strstr(err, "event 'e' has no field 'kind'") && strstr(err, "its fields: req"), "%s",
	       err);
	sp = (struct qy_pair_spec){.from = "s", .to = "e", .by = "zz"};
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == -RINGTRACE_ENOENT);
	CHECKF(strstr(err, "event 's' has no field 'zz'") && strstr(err, "group"), "%s", err);
	sp = (struct qy_pair_spec){.from = "s", .to = "s"};
	CHECK(qy_pair_sql(db, &sp, &sql, err, sizeof(err)) == -RINGTRACE_ENOENT);
	sqlite3_close(db);
}

/* Names that are SQL: the event, its table and its columns named with
 * quotes and statements pair like any other, and change nothing. */
static void hostile_names_stay_names(void)
{
	sqlite3 *db = db_new();
	exec(db, "CREATE TABLE \"x\"\"; DROP TABLE thread; --\"(id, ts, utid, cpu, \"k\"\"\");"
		 "INSERT INTO event_table VALUES ('a''; DROP TABLE s; --', 'x\"; DROP TABLE "
		 "thread; --', 'event', 1, 0);"
		 "INSERT INTO event_column VALUES ('x\"; DROP TABLE thread; --', ') OR 1; --', "
		 "'k\"', 'int');"
		 "INSERT INTO \"x\"\"; DROP TABLE thread; --\" VALUES (1, 10, 1, 0, 5), (3, 10, 2, "
		 "0, 5);"
		 "INSERT INTO event_column VALUES ('e', ') OR 1; --', 'req', 'int');"
		 "INSERT INTO e VALUES (2, 12, 1, 0, 5), (4, 19, 2, 0, 5);");
	struct qy_pair_spec sp = {.from = "a'; DROP TABLE s; --", .to = "e", .key = ") OR 1; --"};
	CHECK_PAIRS(db, &sp, "1>4:9 3>2:2");
	exec(db, "SELECT count(*) FROM thread; SELECT count(*) FROM s;");
	sqlite3_close(db);
}

/* Nearest rank: the value at ceil(p * n), 1-based. */
static void percentile_nearest_rank(void)
{
	int64_t v[1000];
	for (int i = 0; i < 1000; i++)
		v[i] = i + 1;
	CHECK(qy_pair_percentile(v, 0, 500) == 0);
	CHECK(qy_pair_percentile(v, 1, 999) == 1);
	CHECK(qy_pair_percentile(v, 10, 500) == 5);
	CHECK(qy_pair_percentile(v, 10, 900) == 9);
	CHECK(qy_pair_percentile(v, 10, 990) == 10);
	CHECK(qy_pair_percentile(v, 7, 500) == 4);
	CHECK(qy_pair_percentile(v, 1000, 999) == 999);
	CHECK(qy_pair_percentile(v, 999, 999) == 999);
	CHECK(qy_pair_percentile(v, 1000, 1000) == 1000);
	CHECK(qy_pair_percentile(v, 3, 0) == 1);
}

/* The reference: per key a stack of open starts, a stop takes the top;
 * event i (id i + 1) at time ts[i], in this order. */
static void reference(const int *kind, const int *key, const int *ts, int n, char *out, size_t size)
{
	int open[8][512], nopen[8] = {0}, stop_of[2048];
	for (int i = 0; i < n; i++)
		stop_of[i] = -2; /* -2: not a start */
	int orphan[2048] = {0};
	for (int i = 0; i < n; i++) {
		int k = key[i];
		if (kind[i] > 0) {
			stop_of[i] = -1;
			open[k][nopen[k]++] = i;
		} else if (nopen[k]) {
			stop_of[open[k][--nopen[k]]] = i;
		} else {
			orphan[i] = 1;
		}
	}
	size_t o = 0;
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		if (stop_of[i] >= 0)
			o += (size_t)snprintf(out + o, size - o, "%s%d>%d:%d", o ? " " : "", i + 1,
					      stop_of[i] + 1, ts[stop_of[i]] - ts[i]);
		else if (stop_of[i] == -1)
			o += (size_t)snprintf(out + o, size - o, "%s%d>", o ? " " : "", i + 1);
		else if (orphan[i])
			o += (size_t)snprintf(out + o, size - o, "%s>%d", o ? " " : "", i + 1);
	}
}

/* Random sequences over a few keys, against the stack. */
static void random_against_stack(void)
{
	static char want[16384];
	unsigned seed = 12345;
	for (int round = 0; round < 200; round++) {
		sqlite3 *db = db_new();
		int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 300;
		int kind[2048], key[2048], ts[2048];
		exec(db, "BEGIN");
		for (int i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			kind[i] = (seed >> 16) & 1 ? 1 : -1;
			key[i] = (int)(seed >> 20) % (1 + round % 4);
			ts[i] = i * 10;
			char *q = sqlite3_mprintf(
				kind[i] > 0 ? "INSERT INTO s VALUES (%d, %d, 1, 0, "
					      "%d, 'a')"
					    : "INSERT INTO e VALUES (%d, %d, 1, 0, %d)",
				i + 1, i * 10, key[i]);
			exec(db, q);
			sqlite3_free(q);
		}
		exec(db, "COMMIT");
		reference(kind, key, ts, n, want, sizeof(want));
		struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
		const char *got = pairs_text(db, &sp);
		/* (pairs_text orders by the first event's id, as the reference) */
		CHECKF(strcmp(got, want) == 0, "round %d\n  got:  %s\n  want: %s", round, got,
		       want);
		sqlite3_close(db);
	}
}

/*
 * Random sequences again, each event in one of two tables (a collection
 * whose traces define it differently), the rows of a table in shuffled
 * order in some rounds, and times shared by up to three events (their
 * ids decide): the merge by (ts, id) against the stack.
 */
static void random_tables_merged(void)
{
	static char want[16384];
	unsigned seed = 777;
	for (int round = 0; round < 100; round++) {
		sqlite3 *db = db_new();
		exec(db, "CREATE TABLE s2(id, ts, utid, cpu, kind, req);"
			 "CREATE TABLE e2(id, ts, utid, cpu, req);"
			 "INSERT INTO event_table VALUES ('s', 's2', 'event', 2, 0), ('e', 'e2', "
			 "'event', 1, 0);"
			 "INSERT INTO event_column VALUES ('s2', 'req', 'req', 'int'), ('s2', "
			 "'kind', 'kind', 'string'), ('e2', 'req', 'req', 'int');");
		int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 300;
		int kind[2048], key[2048], ts[2048], order[2048];
		for (int i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			kind[i] = (seed >> 16) & 1 ? 1 : -1;
			key[i] = (int)(seed >> 20) % (1 + round % 4);
			ts[i] = i / 3 * 10;
			order[i] = i;
		}
		for (int i = n - 1; round % 2 && i > 0; i--) { /* shuffled rows */
			seed = seed * 1103515245u + 12345u;
			int j = (int)((seed >> 16) % (unsigned)(i + 1)), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		exec(db, "BEGIN");
		for (int o = 0; o < n; o++) {
			int i = order[o];
			int second = (int)((unsigned)(i * 2654435761u) >> 28) & 1;
			char *q = sqlite3_mprintf(
				kind[i] > 0 ? "INSERT INTO %s VALUES (%d, %d, 1, 0, "
					      "'a', %d)"
					    : "INSERT INTO %s VALUES (%d, %d, 1, 0, %d)",
				kind[i] > 0 ? (second ? "s2" : "s") : (second ? "e2" : "e"), i + 1,
				ts[i], key[i]);
			if (kind[i] > 0 && !second) /* s has (req, kind), s2 (kind, req) */
				q = (sqlite3_free(q),
				     sqlite3_mprintf("INSERT INTO s VALUES (%d, %d, 1, 0, %d, 'a')",
						     i + 1, ts[i], key[i]));
			exec(db, q);
			sqlite3_free(q);
		}
		exec(db, "COMMIT");
		reference(kind, key, ts, n, want, sizeof(want));
		struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
		const char *got = pairs_text(db, &sp);
		CHECKF(strcmp(got, want) == 0, "round %d\n  got:  %s\n  want: %s", round, got,
		       want);
		sqlite3_close(db);
	}
}

/* Keys compare as SQL's PARTITION BY: an integer and a real of the same
 * value alike, a text never like a number, NULLs alike, texts by bytes. */
static void keys_compare_as_sql(void)
{
	sqlite3 *db = db_new();
	exec(db,
	     "CREATE TABLE s3(id, ts, utid, cpu, k);"
	     "CREATE TABLE e3(id, ts, utid, cpu, k);"
	     "INSERT INTO event_table VALUES ('s3', 's3', 'event', 1, 0), ('e3', 'e3', 'event', "
	     "1, 0);"
	     "INSERT INTO event_column VALUES ('s3', 'k', 'k', 'int'), ('e3', 'kr', 'k', "
	     "'real'), ('e3', 'kt', 'k', 'string');"
	     "CREATE TABLE e4(id, ts, utid, cpu, k);"
	     "INSERT INTO event_table VALUES ('e4', 'e4', 'event', 1, 0);"
	     "INSERT INTO event_column VALUES ('e4', 'kt', 'k', 'string');"
	     "CREATE TABLE s5(id, ts, utid, cpu, k);"
	     "INSERT INTO event_table VALUES ('s5', 's5', 'event', 1, 0);"
	     "INSERT INTO event_column VALUES ('s5', 'kt', 'k', 'string');");
	/* integers against reals: 5 = 5.0, 7 <> 7.5, NULL = NULL */
	exec(db,
	     "INSERT INTO s3 VALUES (1, 10, 1, 0, 5), (2, 11, 1, 0, 7), (3, 12, 1, 0, NULL),"
	     " (4, 13, 1, 0, -9223372036854775807);"
	     "INSERT INTO e3 VALUES (5, 20, 1, 0, 7.5), (6, 21, 1, 0, 5.0), (7, 22, 1, 0, NULL),"
	     " (8, 23, 1, 0, -9.2233720368547758e18);");
	struct qy_pair_spec sp = {.from = "s3", .to = "e3", .key = "k", .stop_key = "kr"};
	CHECK_PAIRS(db, &sp, "1>6:11 2> 3>7:10 4> >5 >8");
	/* integers against texts: never alike; texts by their bytes */
	exec(db,
	     "INSERT INTO e4 VALUES (9, 30, 1, 0, '5'), (10, 31, 1, 0, '7');"
	     "INSERT INTO s5 VALUES (11, 1, 1, 0, 'ab'), (12, 2, 1, 0, 'a'), (13, 3, 1, 0, 'b');"
	     "INSERT INTO e4 VALUES (14, 32, 1, 0, 'a'), (15, 33, 1, 0, 'ab');");
	sp = (struct qy_pair_spec){.from = "s3", .to = "e4", .key = "k", .stop_key = "kt"};
	CHECK_PAIRS(db, &sp, "1> 2> 3> 4> >9 >10 >14 >15");
	sp = (struct qy_pair_spec){.from = "s5", .to = "e4", .key = "kt"};
	CHECK_PAIRS(db, &sp, ">9 >10 11>15:32 12>14:30 13>");
	sqlite3_close(db);
}

/* pairs() in SQL: its arguments checked, a name that is no event said,
 * and its columns (the key and the group as the events have them). */
static void pairs_function_in_sql(void)
{
	sqlite3 *raw = db_new();
	exec(raw, "INSERT INTO s VALUES (1, 10, 1, 0, 7, 'x'), (2, 20, 2, 0, 8, 'y');"
		  "INSERT INTO e VALUES (3, 30, 2, 0, 7), (4, 45, 1, 0, 8);");
	struct stored x = stored_new(raw);
	sqlite3_stmt *st;
	CHECK(sqlite3_prepare_v2(x.db,
				 "SELECT id, ts, utid, dur, stop_id, stop_ts, stop_utid, key, grp "
				 "FROM pairs('s', 'e', 'req', NULL, 'kind')",
				 -1, &st, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK(sqlite3_column_int64(st, 0) == 1 && sqlite3_column_int64(st, 1) == 10 &&
	      sqlite3_column_int64(st, 2) == 1 && sqlite3_column_int64(st, 3) == 20 &&
	      sqlite3_column_int64(st, 4) == 3 && sqlite3_column_int64(st, 5) == 30 &&
	      sqlite3_column_int64(st, 6) == 2);
	CHECK(sqlite3_column_type(st, 7) == SQLITE_INTEGER && sqlite3_column_int64(st, 7) == 7);
	CHECK(strcmp((const char *)sqlite3_column_text(st, 8), "x") == 0);
	CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 2);
	CHECK(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
	static const char *const bad[][2] = {
		{"SELECT * FROM pairs('s')", "needs its start and stop events"},
		{"SELECT * FROM pairs('s', 's')", "the same event 's'"},
		{"SELECT * FROM pairs('s', 'nope')", "no event 'nope' in the trace"},
		{"SELECT * FROM pairs('s', 'e', 'kind')", "event 'e' has no field 'kind'"},
		{"SELECT * FROM pairs('s', 'e', NULL, 'req')", "needs a key field"},
		{"SELECT * FROM pairs('s', 'e''; DROP TABLE thread; --')", "no event 'e'; DROP"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *msg = NULL;
		CHECKF(sqlite3_exec(x.db, bad[i][0], NULL, NULL, &msg) == SQLITE_ERROR, "%s",
		       bad[i][0]);
		CHECKF(msg && strstr(msg, bad[i][1]), "%s: %s", bad[i][0], msg ? msg : "?");
		sqlite3_free(msg);
	}
	exec(x.db, "SELECT count(*) FROM thread");
	stored_free(&x);
	sqlite3_close(raw);
}

static const struct check_case cases[] = {
	CHECK_CASE(pair_nested_starts_close_in_reverse_by_thread, nested_by_thread),
	CHECK_CASE(pair_unpaired_starts_and_stops_counted, unpaired_counted),
	CHECK_CASE(pair_by_key_across_threads, by_key_across_threads),
	CHECK_CASE(pair_same_time_in_event_order, same_time_by_id),
	CHECK_CASE(pair_groups_sorted_with_longest_pairs, groups_sorted_with_top),
	CHECK_CASE(pair_losses_mark_pairs_and_unpaired, losses_marked),
	CHECK_CASE(pair_unknown_event_or_field_names_what_there_is, unknown_names_said),
	CHECK_CASE(pair_hostile_names_stay_names, hostile_names_stay_names),
	CHECK_CASE(pair_percentile_nearest_rank, percentile_nearest_rank),
	CHECK_CASE(pair_random_sequences_equal_a_stack, random_against_stack),
	CHECK_CASE(pair_random_sequences_in_two_tables_merged, random_tables_merged),
	CHECK_CASE(pair_keys_compare_as_sql_partitions, keys_compare_as_sql),
	CHECK_CASE(pair_pairs_function_columns_and_errors, pairs_function_in_sql),
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
