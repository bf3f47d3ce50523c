/*
 * ringtrace-bench query: how fast does a trace become SQL tables, and what
 * do queries on them cost?
 *
 * One run, one trace: T threads (default 4) record N one-int events
 * (bench_int, default 10 M) into a trace directory (default on tmpfs,
 * /dev/shm), as `ringtrace-bench report` does. Then:
 *
 *   (a) the import: coll_open, qy_import of the whole trace into the store
 *       and qy_sqlite_attach (every table ready to query), timed in this
 *       process: events/s, MB/s of trace bytes, the store's bytes per
 *       event. The event table, `slice` and `args` must hold one row per
 *       event recorded, and the import must find no damage;
 *   (b) SQL: the event table copied into a native table of the same
 *       database (CREATE TABLE AS SELECT), then each query (a scan with a
 *       filter and an aggregate; a GROUP BY) run on the virtual table and
 *       on the native one, alternately, median of R runs each: the ratio
 *       virtual/native, and the two answers must be equal. For reference,
 *       SQLite's own insert of the same rows one by one (a prepared
 *       statement, one transaction);
 *   (c) the route a user has without ringtrace: babeltrace2's Python
 *       bindings reading the trace into SQLite with executemany
 *       (bench/query_bt2.py, next to this binary) on the first S events
 *       (default 200,000: it reads about 19,000 events/s), its rate
 *       extrapolated to the whole trace; the ratio ringtrace/bt2;
 *   (d) `ringtrace report DIR > /dev/null` (median of R) on the same trace;
 *       `ringtrace query DIR 'SELECT count(*) FROM slice'` as a user waits
 *       for it (the process, start to end) and `ringtrace query --db FILE
 *       DIR` (FILE beside DIR, removed after), their time and peak memory
 *       (the --db import copies its rows out a chunk at a time).
 *
 * The machine's state (CPUs, load average, the cheapest event's cost, see
 * docs/benchmarks.md) is printed before and after. Exit status 1 if a check
 * fails (row counts, damage, answers that differ); speed goals are printed
 * as met or NOT met and fail the run only with --check.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_trace.h"
#include "query/query_api.h"

#define QB "query"
#define QB_MAX_RUNS 9
#define GOAL_IMPORT_EPS 3e6
#define GOAL_QUERY_RATIO 1.5
#define GOAL_BT2_RATIO 100.0
/* Perfetto's own published figure for its JSON trace import */
#define PERFETTO_JSON_MBPS 177.0

struct query_opts {
	uint64_t events;
	unsigned threads;
	const char *dir;
	uint64_t sample;
	unsigned runs;
	const char *python;
	int check; /* speed goals missed fail the run */
	int no_insert;
};

/* What the run found: checks failed, goals missed. */
struct query_run {
	const struct query_opts *o;
	char tool[PATH_MAX + 16];
	uint64_t trace_bytes;
	struct coll c;
	int coll_open;
	struct qy_store *s;
	sqlite3 *db;
	char table[256];  /* the event table's name, quoted */
	char column[256]; /* its field's column, quoted */
	const char *table_plain;
	double import_eps;
	int failed;
	int missed;
};

/* ---- the machine ---- */

static void machine_state(const char *when)
{
	double load[3] = {NAN, NAN, NAN};
	if (getloadavg(load, 3) != 3)
		load[0] = load[1] = load[2] = NAN;
	printf("machine (%s): %ld CPUs online, load average %.2f %.2f %.2f, cheapest event "
	       "%.2f ns\n",
	       when, sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2],
	       bench_measure_cheapest(-1));
	fflush(stdout);
}

static void goal(struct query_run *r, const char *what, int met)
{
	printf("goal %s: %s\n", what, met ? "met" : "NOT met");
	if (!met)
		r->missed++;
}

static void check_fail(struct query_run *r, const char *fmt, const char *what, uint64_t got,
		       uint64_t want)
{
	fprintf(stderr, "ringtrace-bench query: check failed: ");
	fprintf(stderr, fmt, what, got, want);
	fputc('\n', stderr);
	r->failed++;
}

/* ---- SQL helpers ---- */

/* The first column of the first row of sql as an integer; -1 (said) on error. */
static int sql_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*out = sqlite3_column_int64(st, 0);
		rc = rc == SQLITE_ROW ? SQLITE_OK : rc;
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_OK) {
		fprintf(stderr, "ringtrace-bench query: %s: %s\n", sql, sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

/* The first column of the first row of sql, a text, into buf; -1 (said) if none. */
static int sql_text(sqlite3 *db, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	int ok = 0;
	if (rc == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
			snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
			ok = 1;
		}
		sqlite3_finalize(st);
	}
	if (!ok)
		fprintf(stderr, "ringtrace-bench query: %s: %s\n", sql,
			rc == SQLITE_OK ? "no row" : sqlite3_errmsg(db));
	return ok ? 0 : -1;
}

/*
 * Run sql to its end: seconds, and a digest of every value of every row
 * (FNV-1a over their text) in *digest, so that two tables' answers can be
 * compared; NAN (said) on error.
 */
static double sql_timed(sqlite3 *db, const char *sql, uint64_t *digest)
{
	sqlite3_stmt *st;
	uint64_t t0 = bench_now_ns(), h = 1469598103934665603ull;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "ringtrace-bench query: %s: %s\n", sql, sqlite3_errmsg(db));
		return NAN;
	}
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const unsigned char *p = sqlite3_column_text(st, i);
			for (; p && *p; p++)
				h = (h ^ *p) * 1099511628211ull;
			h = (h ^ 0xff) * 1099511628211ull;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "ringtrace-bench query: %s: %s\n", sql, sqlite3_errmsg(db));
		return NAN;
	}
	*digest = h;
	return (double)(bench_now_ns() - t0) / 1e9;
}

/* ---- (a) the import ---- */

static void import_error(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "ringtrace-bench query: import: %s\n", msg);
}

/* One table's row count must be the events recorded. */
static void check_count(struct query_run *r, const char *table, const char *sql)
{
	int64_t n = -1;
	if (sql_int(r->db, sql, &n) != 0 || n != (int64_t)r->o->events)
		check_fail(r, "%s holds %" PRIu64 " rows for %" PRIu64 " events", table,
			   (uint64_t)n, r->o->events);
}

/* The event table of bench_int and the column of its field v, quoted. 0, or -1. */
static int find_event_table(struct query_run *r)
{
	char name[128], col[128], sql[512];
	if (sql_text(r->db, "SELECT table_name FROM event_table WHERE event = 'bench_int'", name,
		     sizeof(name)) != 0)
		return -1;
	if (qy_ident(r->table, sizeof(r->table), name) != 0)
		return -1;
	snprintf(sql, sizeof(sql),
		 "SELECT column_name FROM event_column WHERE table_name = '%s' AND field = 'v'",
		 name);
	if (sql_text(r->db, sql, col, sizeof(col)) != 0 ||
	    qy_ident(r->column, sizeof(r->column), col) != 0)
		return -1;
	struct qy_table *t = qy_table_find(r->s, name);
	if (!t) {
		fprintf(stderr, "ringtrace-bench query: event_table names %s, not in the store\n",
			name);
		return -1;
	}
	r->table_plain = t->name;
	return 0;
}

/* Every table's rows for the recorded events, no damage. */
static void import_checks(struct query_run *r, const struct qy_import_result *res)
{
	if (res->events != r->o->events)
		check_fail(r, "%s: %" PRIu64 " events imported, %" PRIu64 " recorded", "qy_import",
			   res->events, r->o->events);
	if (res->errors != 0)
		check_fail(r, "%s: %" PRIu64 " errors (damage), %" PRIu64 " expected", "qy_import",
			   res->errors, 0);
	if (find_event_table(r) != 0) {
		r->failed++;
		return;
	}
	char sql[600];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", r->table);
	check_count(r, r->table_plain, sql);
	check_count(r, "slice", "SELECT count(*) FROM slice");
	check_count(r, "args", "SELECT count(*) FROM args");
}

static int run_import(struct query_run *r)
{
	char err[512] = "";
	struct qy_import_result res = {0};
	struct qy_import_opts io = {0};
	io.on_error = import_error;
	uint64_t t0 = bench_now_ns();
	if (coll_open(r->o->dir, "ringtrace-bench query", import_error, &r->c) != 0)
		return -1;
	r->coll_open = 1;
	r->s = qy_store_new();
	if (!r->s) {
		fprintf(stderr, "ringtrace-bench query: out of memory\n");
		return -1;
	}
	uint64_t t1 = bench_now_ns();
	if (qy_import(r->s, &r->c, &io, &res, err, sizeof(err)) != 0) {
		fprintf(stderr, "ringtrace-bench query: import: %s\n", err);
		return -1;
	}
	uint64_t t2 = bench_now_ns();
	if (sqlite3_open(":memory:", &r->db) != SQLITE_OK ||
	    qy_sqlite_attach(r->db, r->s, err, sizeof(err)) != 0) {
		fprintf(stderr, "ringtrace-bench query: attach: %s\n",
			err[0] ? err : "cannot open an SQLite database");
		return -1;
	}
	uint64_t t3 = bench_now_ns();
	double secs = (double)(t3 - t0) / 1e9;
	uint64_t bytes = qy_store_bytes(r->s);
	r->import_eps = (double)r->o->events / secs;
	printf("import: %.2f M events/s (%.3f s: open %.3f, qy_import %.3f, attach %.3f)\n",
	       r->import_eps / 1e6, secs, (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9,
	       (double)(t3 - t2) / 1e9);
	printf("import: %.1f MB/s of trace bytes (Perfetto's own published figure for its JSON "
	       "import: about %.0f MB/s)\n",
	       (double)r->trace_bytes / secs / 1e6, PERFETTO_JSON_MBPS);
	printf("store: %.1f bytes per event (%.1f MiB, %u tables)\n",
	       (double)bytes / (double)r->o->events, (double)bytes / 1048576.0,
	       qy_table_count(r->s));
	fflush(stdout);
	import_checks(r, &res);
	goal(r, "import >= 3M events/s", r->import_eps >= GOAL_IMPORT_EPS);
	return 0;
}

/* ---- (b) queries: virtual table against native table ---- */

/* The event table's rows copied into main.native_int. 0, or -1 (said). */
static int copy_native(struct query_run *r)
{
	char sql[600], *msg = NULL;
	snprintf(sql, sizeof(sql), "CREATE TABLE main.native_int AS SELECT * FROM temp.%s",
		 r->table);
	uint64_t t0 = bench_now_ns();
	if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "ringtrace-bench query: %s: %s\n", sql, msg ? msg : "error");
		sqlite3_free(msg);
		return -1;
	}
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	printf("native copy (CREATE TABLE AS SELECT): %.2f M rows/s (%.3f s)\n",
	       (double)r->o->events / secs / 1e6, secs);
	check_count(r, "native_int", "SELECT count(*) FROM main.native_int");
	return 0;
}

/* The query on both tables, alternately, `runs` times: their medians. */
static int compare_query(struct query_run *r, const char *what, const char *fmt)
{
	char vsql[1024], nsql[1024];
	char vname[300];
	snprintf(vname, sizeof(vname), "temp.%s", r->table);
	snprintf(vsql, sizeof(vsql), fmt, r->column, r->column, vname, r->column);
	snprintf(nsql, sizeof(nsql), fmt, r->column, r->column, "main.native_int", r->column);
	double tv[QB_MAX_RUNS], tn[QB_MAX_RUNS];
	uint64_t dv = 0, dn = 0;
	for (unsigned i = 0; i < r->o->runs; i++) {
		tv[i] = sql_timed(r->db, vsql, &dv);
		tn[i] = sql_timed(r->db, nsql, &dn);
		if (isnan(tv[i]) || isnan(tn[i]))
			return -1;
		if (dv != dn) {
			fprintf(stderr,
				"ringtrace-bench query: check failed: %s answers differently "
				"on the virtual and the native table\n",
				vsql);
			r->failed++;
			break;
		}
	}
	double mv = bench_median(tv, r->o->runs), mn = bench_median(tn, r->o->runs);
	printf("query %s: virtual %.3f s, native %.3f s, ratio %.2f\n  %s\n", what, mv, mn, mv / mn,
	       vsql);
	fflush(stdout);
	char g[128];
	snprintf(g, sizeof(g), "%s virtual/native <= %.1f", what, GOAL_QUERY_RATIO);
	goal(r, g, mv / mn <= GOAL_QUERY_RATIO);
	return 0;
}

/* Bind column c of row i of t to parameter c + 1. */
static int bind_cell(struct qy_store *s, sqlite3_stmt *st, struct qy_table *t, uint32_t c,
		     uint64_t i)
{
	int p = (int)c + 1;
	switch (t->cols[c].type) {
	case QY_INT: {
		int64_t v = qy_i64(t, c)[i];
		return v == QY_NULL_INT ? sqlite3_bind_null(st, p) : sqlite3_bind_int64(st, p, v);
	}
	case QY_REAL: {
		double v = qy_f64(t, c)[i];
		return isnan(v) ? sqlite3_bind_null(st, p) : sqlite3_bind_double(st, p, v);
	}
	default: {
		size_t len = 0;
		const char *v = qy_str_get(s, qy_sid(t, c)[i], &len);
		return v ? sqlite3_bind_text(st, p, v, (int)len, SQLITE_STATIC)
			 : sqlite3_bind_null(st, p);
	}
	}
}

/* The statements of the one-by-one insert: the table and its INSERT. */
static int prepare_insert(struct query_run *r, struct qy_table *t, sqlite3_stmt **st)
{
	char create[4096] = "CREATE TABLE main.insert_int (",
	     ins[4096] = "INSERT INTO main.insert_int VALUES (";
	for (uint32_t c = 0; c < t->ncols; c++) {
		char id[256];
		if (qy_ident(id, sizeof(id), t->cols[c].name) != 0)
			return -1;
		size_t n = strlen(create), m = strlen(ins);
		snprintf(create + n, sizeof(create) - n, "%s%s", c ? ", " : "", id);
		snprintf(ins + m, sizeof(ins) - m, "%s?", c ? ", " : "");
	}
	strncat(create, ")", sizeof(create) - strlen(create) - 1);
	strncat(ins, ")", sizeof(ins) - strlen(ins) - 1);
	if (sqlite3_exec(r->db, create, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, ins, -1, st, NULL) != SQLITE_OK) {
		fprintf(stderr, "ringtrace-bench query: insert: %s\n", sqlite3_errmsg(r->db));
		return -1;
	}
	return 0;
}

/* SQLite's own insert of the event table's rows, one by one, one transaction. */
static int insert_one_by_one(struct query_run *r)
{
	struct qy_table *t = qy_table_find(r->s, r->table_plain);
	sqlite3_stmt *st = NULL;
	if (!t || prepare_insert(r, t, &st) != 0)
		return -1;
	uint64_t t0 = bench_now_ns();
	int rc = sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
	for (uint64_t i = 0; i < t->nrows && rc == SQLITE_OK; i++) {
		for (uint32_t c = 0; c < t->ncols && rc == SQLITE_OK; c++)
			rc = bind_cell(r->s, st, t, c, i);
		if (rc == SQLITE_OK)
			rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(st);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "ringtrace-bench query: insert: %s\n", sqlite3_errmsg(r->db));
		return -1;
	}
	printf("SQLite insert one by one (prepared, one transaction): %.2f M rows/s (%.3f s)\n",
	       (double)t->nrows / secs / 1e6, secs);
	check_count(r, "insert_int", "SELECT count(*) FROM main.insert_int");
	sqlite3_exec(r->db, "DROP TABLE main.insert_int", NULL, NULL, NULL);
	return 0;
}

/*
 * The queries: "%s" the field's column (twice), then the table, then the
 * column again. A scan that no constraint can narrow (a modulo), with an
 * aggregate; a GROUP BY that sorts.
 */
static int run_queries(struct query_run *r)
{
	if (copy_native(r) != 0)
		return -1;
	if (compare_query(r, "scan+filter+aggregate",
			  "SELECT count(*), sum(%s), max(%s) FROM %s WHERE %s %% 3 = 0") != 0)
		return -1;
	if (compare_query(
		    r, "GROUP BY",
		    "SELECT utid, count(*), sum(%s), min(%s) FROM %s GROUP BY utid, %s %% 16") != 0)
		return -1;
	if (!r->o->no_insert && insert_one_by_one(r) != 0)
		return -1;
	return 0;
}

/* ---- (c) babeltrace2's Python bindings into SQLite ---- */

static void run_bt2(struct query_run *r)
{
	char script[PATH_MAX + 16], limit[32], out[256];
	if (bench_find_sibling(QB, "query_bt2.py", script, sizeof(script)) != 0) {
		r->failed++;
		return;
	}
	uint64_t n = r->o->sample < r->o->events ? r->o->sample : r->o->events;
	snprintf(limit, sizeof(limit), "%" PRIu64, n);
	char *argv[] = {(char *)r->o->python, script, (char *)r->o->dir, limit, NULL};
	int status;
	double wall = bench_time_command(QB, argv, 1, 0, out, sizeof(out), &status);
	unsigned long long got = 0;
	double secs = 0;
	if (status == 3) {
		printf("bt2 route: not measured (%s cannot import bt2: install python3-bt2, or give "
		       "--python)\n",
		       r->o->python);
		return;
	}
	if (isnan(wall) || sscanf(out, "events %llu seconds %lf", &got, &secs) != 2 || secs <= 0) {
		fprintf(stderr, "ringtrace-bench query: check failed: %s gave no figure\n", script);
		r->failed++;
		return;
	}
	if (got != n)
		check_fail(r, "%s read %" PRIu64 " events of the %" PRIu64 " asked", "bt2 route",
			   (uint64_t)got, n);
	double eps = (double)got / secs;
	printf("bt2 route (babeltrace2 Python bindings, executemany into SQLite): %.0f events/s "
	       "on the first %llu events (%.3f s; %.3f s with the interpreter's start), "
	       "extrapolated to the whole trace: %.0f s\n",
	       eps, got, secs, wall, (double)r->o->events / eps);
	if (r->import_eps > 0) {
		printf("ratio import ringtrace/bt2: %.1f\n", r->import_eps / eps);
		goal(r, "ringtrace/bt2 >= 100", r->import_eps / eps >= GOAL_BT2_RATIO);
	}
	fflush(stdout);
}

/* ---- (d) the command on the same trace ---- */

/*
 * `ringtrace query ARGS... SQL` (SQL a count, printed as CSV) timed as a
 * process: seconds, or NAN (a check failed, said). The count must be the
 * events recorded.
 */
static double time_query_count(struct query_run *r, char **argv, const char *what)
{
	char out[128];
	double t = bench_time_command(QB, argv, 0, 0, out, sizeof(out), NULL);
	if (isnan(t)) {
		r->failed++;
		return NAN;
	}
	/* the count is the output's last line, whatever header comes before it */
	size_t len = strlen(out);
	while (len > 0 && out[len - 1] == '\n')
		out[--len] = '\0';
	const char *last = strrchr(out, '\n');
	unsigned long long n = 0;
	if (sscanf(last ? last + 1 : out, "%llu", &n) != 1 || n != r->o->events)
		check_fail(r, "%s printed %" PRIu64 " slices for %" PRIu64 " events", what,
			   (uint64_t)n, r->o->events);
	return t;
}

/*
 * The command as a user runs it: the import in memory and a query, then
 * `--db FILE` (the tables written to a file a chunk at a time, so that
 * its memory stays bounded) and a query of the file; time and peak memory.
 */
static void run_query_tool(struct query_run *r)
{
	char *dir = (char *)r->o->dir, *sql = "SELECT count(*) FROM slice";
	char *help_argv[] = {r->tool, "query", "--help", NULL};
	if (isnan(bench_time_command(QB, help_argv, 0, 1, NULL, 0, NULL))) {
		printf("ringtrace query: not in this build of the tool\n");
		return;
	}
	char *mem_argv[] = {r->tool, "query", "--format", "csv", dir, sql, NULL};
	double t = time_query_count(r, mem_argv, "ringtrace query DIR");
	if (isnan(t))
		return;
	printf("ringtrace query DIR '%s' (the process): %.2f M events/s (%.3f s), peak RSS "
	       "%.0f MiB\n",
	       sql, (double)r->o->events / t / 1e6, t, (double)bench_last_child_peak_kb() / 1024);
	fflush(stdout);

	char db[PATH_MAX + 8];
	snprintf(db, sizeof(db), "%s.db", r->o->dir);
	unlink(db);
	char *write_argv[] = {r->tool, "query", "--db", db, dir, NULL};
	t = bench_time_command(QB, write_argv, 0, 0, NULL, 0, NULL);
	if (isnan(t)) {
		r->failed++;
		unlink(db);
		return;
	}
	long rss = bench_last_child_peak_kb();
	char *read_argv[] = {r->tool, "query", "--format", "csv", "--db", db, sql, NULL};
	double tr = time_query_count(r, read_argv, "ringtrace query --db FILE");
	printf("ringtrace query --db FILE DIR (the process): %.2f M events/s (%.3f s), peak RSS "
	       "%.0f MiB; then the query on FILE %.3f s\n",
	       (double)r->o->events / t / 1e6, t, (double)rss / 1024, tr);
	fflush(stdout);
	unlink(db);
}

static void run_tool(struct query_run *r)
{
	char *report_argv[] = {r->tool, "report", (char *)r->o->dir, NULL};
	double t = bench_time_median(QB, report_argv, (int)r->o->runs);
	if (isnan(t)) {
		r->failed++;
		return;
	}
	printf("ringtrace report: %.2f M events/s (%.3f s, median of %u)\n",
	       (double)r->o->events / t / 1e6, t, r->o->runs);
	fflush(stdout);
	bench_measure_child_peak(1);
	run_query_tool(r);
	bench_measure_child_peak(0);
}

/* ---- options and main ---- */

static void query_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench query [options]\n\n"
		"Records a trace of N one-int events from T threads, then in one run:\n"
		"(a) imports it into the SQL layer's store (qy_import, qy_sqlite_attach):\n"
		"    events/s, MB/s of trace bytes, store bytes per event (goal >= 3M events/s);\n"
		"(b) runs a scan with a filter and an aggregate and a GROUP BY on the event's\n"
		"    virtual table and on a native copy of it, alternately, median of R\n"
		"    (goal virtual/native <= 1.5), and SQLite's one-by-one insert of the rows;\n"
		"(c) babeltrace2's Python bindings into SQLite with executemany\n"
		"    (query_bt2.py next to this binary) on the first S events, extrapolated\n"
		"    (goal ringtrace/bt2 >= 100);\n"
		"(d) `ringtrace report` (median of R), `ringtrace query DIR SQL` and\n"
		"    `ringtrace query --db FILE DIR` on it (time, peak memory).\n"
		"The machine's state is printed before and after.\n\n"
		"options:\n"
		"  --events N      events to record (default 10000000)\n"
		"  --threads T     threads emitting them (default 4)\n"
		"  --dir DIR       trace directory, removed first and at the end\n"
		"                  (default /dev/shm/ringtrace-bench-query-PID)\n"
		"  --sample S      events the bt2 route reads (default 200000)\n"
		"  --runs R        runs of each query and of report (1..9, default 3)\n"
		"  --python PATH   the Python that runs query_bt2.py (default /usr/bin/python3,\n"
		"                  else python3 on the PATH)\n"
		"  --no-insert     leave out the one-by-one insert (about 10 s at 10M)\n"
		"  --check         exit 1 if a speed goal is missed too\n"
		"  -h, --help      this help\n\n"
		"exit status: 0 every check passed (row counts, no damage, equal answers),\n"
		"1 a check failed (or, with --check, a goal was missed), 2 usage error\n");
}

static int query_parse_one(int c, struct query_opts *o, char **argv)
{
	switch (c) {
	case 'e':
		if (bench_parse_u64(optarg, 1, 1000000000000ull, &o->events))
			return bench_usage_error(QB, "--events: '%s' is not a count", optarg);
		return -1;
	case 't':
		if (bench_parse_uint(optarg, 1, 1024, &o->threads))
			return bench_usage_error(QB, "--threads: '%s' is not in 1..1024", optarg);
		return -1;
	case 'd':
		if (!*optarg || strlen(optarg) >= PATH_MAX)
			return bench_usage_error(QB, "--dir: '%s' is not a usable directory name",
						 optarg);
		o->dir = optarg;
		return -1;
	case 's':
		if (bench_parse_u64(optarg, 1, 1000000000000ull, &o->sample))
			return bench_usage_error(QB, "--sample: '%s' is not a count", optarg);
		return -1;
	case 'r':
		if (bench_parse_uint(optarg, 1, QB_MAX_RUNS, &o->runs))
			return bench_usage_error(QB, "--runs: '%s' is not in 1..9", optarg);
		return -1;
	case 'p':
		o->python = optarg;
		return -1;
	case 'n':
		o->no_insert = 1;
		return -1;
	case 'c':
		o->check = 1;
		return -1;
	case 'h':
		query_usage(stdout);
		return BENCH_EXIT_OK;
	default: /* ':' missing value, '?' unknown option */
		return bench_getopt_error(QB, c, argv);
	}
}

/* Reads the options into *o; returns -1 to go on, else the exit status. */
static int query_parse_args(int argc, char **argv, struct query_opts *o)
{
	static const struct option longopts[] = {
		{"events", required_argument, NULL, 'e'}, {"threads", required_argument, NULL, 't'},
		{"dir", required_argument, NULL, 'd'},    {"sample", required_argument, NULL, 's'},
		{"runs", required_argument, NULL, 'r'},   {"python", required_argument, NULL, 'p'},
		{"no-insert", no_argument, NULL, 'n'},    {"check", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		int st = query_parse_one(c, o, argv);
		if (st >= 0)
			return st;
	}
	if (optind < argc)
		return bench_usage_error(QB, "unexpected argument '%s'", argv[optind]);
	return -1;
}

static void query_run_free(struct query_run *r)
{
	if (r->db)
		sqlite3_close(r->db);
	if (r->s)
		qy_store_free(r->s);
	if (r->coll_open)
		coll_close(&r->c);
	bench_remove_tree(QB, r->o->dir);
}

int query_bench_main(int argc, char **argv)
{
	/* the default trace directory is this run's own: two runs at once must not
	 * remove each other's trace */
	char default_dir[64];
	snprintf(default_dir, sizeof(default_dir), "/dev/shm/ringtrace-bench-query-%d",
		 (int)getpid());
	struct query_opts o = {
		.events = 10000000ull,
		.threads = 4,
		.dir = default_dir,
		.sample = 200000,
		.runs = 3,
		.python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3",
	};
	int status = query_parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	struct query_run r = {.o = &o};
	/* the figures and the messages in order, whatever stdout is */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (bench_find_sibling(QB, "ringtrace", r.tool, sizeof(r.tool)) < 0)
		return BENCH_EXIT_FAIL;

	machine_state("before");
	if (bench_record_ints(QB, o.dir, o.events, o.threads) != 0) {
		query_run_free(&r);
		return BENCH_EXIT_FAIL;
	}
	r.trace_bytes = bench_tree_bytes(o.dir);
	printf("events: %" PRIu64 " (%u threads)\ntrace bytes: %" PRIu64 " (%.1f per event)\n",
	       o.events, o.threads, r.trace_bytes, (double)r.trace_bytes / (double)o.events);
	fflush(stdout);

	if (run_import(&r) != 0 || r.failed || run_queries(&r) != 0)
		r.failed++;
	/* the store and the database go before the processes run beside */
	if (r.db)
		sqlite3_close(r.db);
	if (r.s)
		qy_store_free(r.s);
	r.db = NULL;
	r.s = NULL;
	run_bt2(&r);
	run_tool(&r);
	machine_state("after");
	query_run_free(&r);
	if (r.failed) {
		printf("checks: %d FAILED\n", r.failed);
		return BENCH_EXIT_FAIL;
	}
	printf("checks: passed; goals missed: %d\n", r.missed);
	return o.check && r.missed ? BENCH_EXIT_FAIL : BENCH_EXIT_OK;
}
