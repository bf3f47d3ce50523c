/*
 * The pairs query (src/query/pair.c) on tables made by hand in SQLite, in
 * the shape the import gives them (query_api.h: event_table,
 * event_column, thread, loss, one table per event): which stop pairs with
 * which start (the most recent unpaired one, per key), the unpaired ones,
 * groups, losses, nearest-rank percentiles, names that try to be SQL,
 * and the window-function pairing against a plain stack on random
 * sequences.
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
 * never started. */
static const char *pairs_text(sqlite3 *db, const struct qy_pair_spec *sp)
{
	static char out[8192];
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
	while (sqlite3_step(st) == SQLITE_ROW) {
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
	sqlite3_finalize(st);
	free(q);
	free(sql);
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
	CHECK(qy_pairs_collect(db, sql, 10, &p, err, sizeof(err)) == 0);
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
	CHECK(qy_pairs_collect(db, sql, 2, &p, err, sizeof(err)) == 0);
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
	CHECK(qy_pairs_collect(db, sql, 5, &p, err, sizeof(err)) == 0);
	CHECK_EQ_U64(p.loss_places, 2);
	CHECK_EQ_U64(p.lost_events, 8);
	CHECK_EQ_U64(p.g[0].lossy, 1); /* 4>5 spans 35; 2>3 spans none */
	CHECK(p.g[0].top[0].id == 4 && p.g[0].top[0].lossy && !p.g[0].top[1].lossy);
	CHECK_EQ_U64(p.start_lossy, 0); /* the start at 50: no loss after it */
	CHECK_EQ_U64(p.stop_lossy, 1);  /* the stop at 5: a loss at 3 */
	qy_pairs_free(&p);
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

/* The reference: per key a stack of open starts, a stop takes the top. */
static void reference(const int *kind, const int *key, int n, char *out, size_t size)
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
					      stop_of[i] + 1, (stop_of[i] - i) * 10);
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
		int kind[2048], key[2048];
		exec(db, "BEGIN");
		for (int i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			kind[i] = (seed >> 16) & 1 ? 1 : -1;
			key[i] = (int)(seed >> 20) % (1 + round % 4);
			char *q = sqlite3_mprintf(
				kind[i] > 0 ? "INSERT INTO s VALUES (%d, %d, 1, 0, "
					      "%d, 'a')"
					    : "INSERT INTO e VALUES (%d, %d, 1, 0, %d)",
				i + 1, i * 10, key[i]);
			exec(db, q);
			sqlite3_free(q);
		}
		exec(db, "COMMIT");
		reference(kind, key, n, want, sizeof(want));
		struct qy_pair_spec sp = {.from = "s", .to = "e", .key = "req"};
		const char *got = pairs_text(db, &sp);
		/* (pairs_text orders by the first event's id, as the reference) */
		CHECKF(strcmp(got, want) == 0, "round %d\n  got:  %s\n  want: %s", round, got,
		       want);
		sqlite3_close(db);
	}
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
};

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
