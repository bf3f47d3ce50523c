/*
 * The import of the SQL layer (src/query/import.c): traces recorded by
 * `ringtrace record` imported into a store, its tables read directly
 * (the SQL side is tested with the command).
 *
 *  - the demo's trace: each event's rows and a field's sum equal what
 *    `ringtrace stat` and `ringtrace report` say;
 *  - known nested spans (test_query_spans_prog): depth, parents,
 *    durations, a begin never ended, an end without begin, counters,
 *    printf records; nesting deeper than the import keeps;
 *  - hostile event and field names: safe table and column names, listed;
 *  - a collection: tables shared by events of the same name and fields;
 *    the kernel's trace's events in their tables (root);
 *  - a damaged trace: imported up to the damage, the damage in stats;
 *  - losses: the loss rows' dropped and overrun sums equal `ringtrace
 *    stat`'s;
 *  - chunks (`--db FILE`): every row given once, durations given late.
 */
#include <sys/stat.h>

#include <sqlite3.h>

#include "check.h"
#include "query/query_api.h"

#ifndef RINGTRACE_TOOL
#error "RINGTRACE_TOOL must name the ringtrace command"
#endif

static char tmp[64];

static void rm_tree(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

static void make_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "%s/rt-query-import-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(tmp) != NULL);
}

/* Run a shell command line; its exit status must be 0. */
static void sh(const char *fmt, ...) CHECK_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	CHECKF(st == 0, "'%s' exited with status %d", cmd, st);
}

/* `ringtrace record` of a program into tmp/name. */
static void record(const char *name, const char *prog_and_args)
{
	sh("'%s' record -q -o '%s/%s' -- %s > '%s/%s.out' 2>&1", RINGTRACE_TOOL, tmp, name,
	   prog_and_args, tmp, name);
}

struct imported {
	struct coll c;
	struct qy_store *s;
	struct qy_import_result r;
	int rc;
	char err[256];
	unsigned on_error;
};

static void count_error(void *arg, const char *msg)
{
	(void)msg;
	((struct imported *)arg)->on_error++;
}

static void reader_error(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "    (reader: %s)\n", msg);
}

static void import_opts(struct imported *im, const char *dir, const struct qy_import_opts *o)
{
	memset(im, 0, sizeof(*im));
	CHECKF(coll_open(dir, "test_query_import", reader_error, &im->c) == 0, "%s", dir);
	CHECK((im->s = qy_store_new()) != NULL);
	im->rc = qy_import(im->s, &im->c, o, &im->r, im->err, sizeof(im->err));
}

static void import_dir(struct imported *im, const char *dir)
{
	struct qy_import_opts o;
	memset(&o, 0, sizeof(o));
	o.on_error = count_error;
	o.arg = im;
	import_opts(im, dir, &o);
	CHECKF(im->rc == 0, "qy_import: %d: %s", im->rc, im->err);
}

static void import_free(struct imported *im)
{
	qy_store_free(im->s);
	coll_close(&im->c);
}

static struct qy_table *table(struct imported *im, const char *name)
{
	struct qy_table *t = qy_table_find(im->s, name);
	CHECKF(t != NULL, "no table %s", name);
	return t;
}

static uint32_t col(const struct qy_table *t, const char *name)
{
	int c = qy_col_find(t, name);
	CHECKF(c >= 0, "table %s has no column %s", t->name, name);
	return (uint32_t)c;
}

static int64_t ival(struct qy_table *t, const char *c, uint64_t row)
{
	return qy_i64(t, col(t, c))[row];
}

static const char *sval(struct imported *im, struct qy_table *t, const char *c, uint64_t row)
{
	return qy_str_get(im->s, qy_sid(t, col(t, c))[row], NULL);
}

/* The value of stats row (name, idx). */
static int64_t stat_of(struct imported *im, const char *name, int64_t idx)
{
	struct qy_table *t = table(im, "stats");
	for (uint64_t r = 0; r < t->nrows; r++)
		if (strcmp(sval(im, t, "name", r), name) == 0 && ival(t, "idx", r) == idx)
			return ival(t, "value", r);
	check_fail_(__FILE__, __LINE__, "stat_of", "no stats row %s idx %lld", name,
		    (long long)idx);
}

/* The row of event_table for event, or -1. */
static int64_t event_row(struct imported *im, const char *event)
{
	struct qy_table *t = table(im, "event_table");
	for (uint64_t r = 0; r < t->nrows; r++)
		if (strcmp(sval(im, t, "event", r), event) == 0)
			return (int64_t)r;
	return -1;
}

/* The table that holds event (event_table says which). */
static struct qy_table *event_table(struct imported *im, const char *event)
{
	int64_t r = event_row(im, event);
	CHECKF(r >= 0, "event %s is not in event_table", event);
	return table(im, sval(im, table(im, "event_table"), "table_name", (uint64_t)r));
}

/* A file's text (malloc'd). */
/* The store's tables attached to a new in-memory database. */
static sqlite3 *sql_open(struct imported *im)
{
	sqlite3 *db = NULL;
	char err[256];
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
	CHECKF(qy_sqlite_attach(db, im->s, err, sizeof(err)) == 0, "%s", err);
	return db;
}

/* The first column of the first row of sql (an integer; -1: no row). */
static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	CHECKF(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
	       sqlite3_errmsg(db));
	int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return v;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECKF(f != NULL, "%s", path);
	char *buf = NULL;
	size_t n = 0, cap = 0, k;
	char chunk[65536];
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (n + k + 1 > cap) {
			cap = (n + k + 1) * 2;
			CHECK((buf = realloc(buf, cap)) != NULL);
		}
		memcpy(buf + n, chunk, k);
		n += k;
	}
	fclose(f);
	if (!buf)
		CHECK((buf = calloc(1, 1)) != NULL);
	buf[n] = 0;
	return buf;
}

/* `ringtrace stat`'s count of an event ("  NAME  EVENTS  REJECTED"). */
static uint64_t stat_count(const char *text, const char *event)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\n  %s ", event);
	const char *p = strstr(text, pat);
	CHECKF(p != NULL, "ringtrace stat does not list %s", event);
	return strtoull(p + strlen(pat), NULL, 10);
}

/* `ringtrace stat`'s total line: events, dropped, overrun. */
static void stat_totals(const char *text, uint64_t out[3])
{
	const char *p = strstr(text, "\ntotal ");
	CHECKF(p != NULL, "ringtrace stat has no total line");
	unsigned streams;
	CHECK(sscanf(p, "\ntotal %u %" SCNu64 " %" SCNu64 " %" SCNu64, &streams, &out[0], &out[1],
		     &out[2]) == 4);
}

/* ---- the demo's trace ---- */

/*
 * The next pat in text, or NULL: a scan that reads each byte once. (Under
 * ASan, strstr's interceptor measures the whole rest of the text on each
 * call, which makes a loop over a report of megabytes quadratic.)
 */
static const char *next_at(const char *p, const char *pat)
{
	size_t n = strlen(pat);
	for (; *p; p++)
		if (*p == pat[0] && strncmp(p, pat, n) == 0)
			return p;
	return NULL;
}

static void demo_rows_and_sums_equal_stat_and_report(void)
{
	make_tmp();
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' --seconds 0.2 --lines 0", RINGTRACE_DEMO);
	record("demo", cmd);
	sh("'%s' stat '%s/demo' > '%s/stat.txt'", RINGTRACE_TOOL, tmp, tmp);
	sh("'%s' report '%s/demo' > '%s/report.txt'", RINGTRACE_TOOL, tmp, tmp);
	char path[256], dir[256];
	snprintf(path, sizeof(path), "%s/stat.txt", tmp);
	char *stat = slurp(path);
	snprintf(path, sizeof(path), "%s/report.txt", tmp);
	char *report = slurp(path);
	snprintf(dir, sizeof(dir), "%s/demo", tmp);
	struct imported im;
	import_dir(&im, dir);

	static const char *const events[] = {"demo_tick", "demo_work_begin", "demo_work_end",
					     "ringtrace_printf"};
	uint64_t args = 0, all = 0;
	for (int i = 0; i < 4; i++) {
		uint64_t n = stat_count(stat, events[i]);
		struct qy_table *t = event_table(&im, events[i]);
		CHECKF(t->nrows == n, "%s: %" PRIu64 " rows, ringtrace stat says %" PRIu64,
		       events[i], t->nrows, n);
		CHECK_EQ_U64(ival(table(&im, "event_table"), "count",
				  (uint64_t)event_row(&im, events[i])),
			     n);
		args += n * (t->ncols - 4);
		all += n;
	}
	uint64_t tot[3];
	stat_totals(stat, tot);
	CHECK_EQ_U64(all, tot[0]);
	CHECK_EQ_U64(im.r.events, tot[0]);
	CHECK_EQ_U64(stat_of(&im, "events", 0), tot[0]);
	CHECK_EQ_U64(stat_of(&im, "events_dropped", 0), tot[1]);
	CHECK_EQ_U64(stat_of(&im, "events_overrun", 0), tot[2]);
	CHECK_EQ_U64(table(&im, "args")->nrows, args);
	/* slices: the instants, the begins and the printf records */
	CHECK_EQ_U64(table(&im, "slice")->nrows, stat_count(stat, "demo_tick") +
							 stat_count(stat, "demo_work_begin") +
							 stat_count(stat, "ringtrace_printf"));

	/* sums of report's values: seq (uint64) and digest (hex, above INT64_MAX) */
	uint64_t seq = 0, digest = 0, nseq = 0, ndig = 0;
	for (const char *p = report; (p = next_at(p, " seq=")) != NULL; p += 5, nseq++)
		seq += strtoull(p + 5, NULL, 10);
	for (const char *p = report; (p = next_at(p, " digest=")) != NULL; p += 8, ndig++)
		digest += strtoull(p + 8, NULL, 16);
	struct qy_table *tick = event_table(&im, "demo_tick"),
			*end = event_table(&im, "demo_work_end");
	CHECK_EQ_U64(nseq, tick->nrows);
	CHECK_EQ_U64(ndig, end->nrows);
	uint64_t s1 = 0, s2 = 0;
	for (uint64_t r = 0; r < tick->nrows; r++)
		s1 += (uint64_t)ival(tick, "seq", r);
	for (uint64_t r = 0; r < end->nrows; r++)
		s2 += (uint64_t)ival(end, "digest", r);
	CHECK_EQ_U64(s1, seq);
	CHECK_EQ_U64(s2, digest);
	/* the enum as its name, the process as the metadata says */
	struct qy_table *begin = event_table(&im, "demo_work_begin");
	const char *op = sval(&im, begin, "op", 0);
	CHECKF(op && (!strcmp(op, "HASH") || !strcmp(op, "SORT") || !strcmp(op, "COPY")), "op %s",
	       op ? op : "NULL");
	struct qy_table *pr = table(&im, "process");
	CHECK_EQ_U64(pr->nrows, 1);
	CHECK(strcmp(sval(&im, pr, "name", 0), "ringtrace-demo") == 0);
	CHECK(strlen(sval(&im, pr, "uuid", 0)) == 32);
	CHECK(ival(pr, "pid", 0) > 0);
	CHECK_EQ_U64(im.r.errors, 0);
	CHECK_EQ_U64(im.on_error, 0);
	import_free(&im);
	free(stat);
	free(report);
	rm_tree(tmp);
}

/* ---- known spans ---- */

/* The slice of the begin event with arg_set_id id: its row. */
/*
 * args, computed from the event tables: a row per field, the same values
 * as the event's table (an enum's name there, its number too in args),
 * found by arg_set_id through a lookup (a join from slice looks each
 * event up, not a scan of args), in order of arg_set_id, then field order.
 */
static void args_computed_from_event_tables(void)
{
	make_tmp();
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' --seconds 0.2 --lines 0", RINGTRACE_DEMO);
	record("demo", cmd);
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/demo", tmp);
	struct imported im;
	import_dir(&im, dir);
	sqlite3 *db = sql_open(&im);
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM args"), table(&im, "args")->nrows);
	/* the fields of every event table, as many as args holds */
	uint64_t fields = 0;
	struct qy_table *et = table(&im, "event_table");
	for (uint64_t r = 0; r < et->nrows; r++)
		fields += (uint64_t)(ival(et, "count", r) * ival(et, "fields", r));
	CHECK_EQ_U64(table(&im, "args")->nrows, fields);
	/* the demo's work_end event: its fields' values as its table's */
	int64_t ends = sql_int(db, "SELECT count(*) FROM demo_work_end");
	CHECK(ends > 0);
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM demo_work_end w JOIN args a ON "
				 "a.arg_set_id = w.id AND a.key = 'digest' WHERE a.int_value IS "
				 "w.digest AND a.value_type = 'uint'"),
		     ends);
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM demo_work_end w JOIN args a ON "
				 "a.arg_set_id = w.id AND a.key = 'ms' WHERE a.real_value IS w.ms"),
		     ends);
	CHECK_EQ_U64(sql_int(db,
			     "SELECT count(*) FROM demo_work_end w JOIN args a ON "
			     "a.arg_set_id = w.id AND a.key = 'op' WHERE a.string_value IS w.op"),
		     ends);
	/* an enum: the name in the table, the number beside it in args */
	int64_t enums = sql_int(db, "SELECT count(*) FROM args WHERE value_type = 'enum'");
	CHECK(enums > 0);
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM args WHERE value_type = 'enum' AND "
				 "string_value IS NOT NULL AND int_value IS NOT NULL"),
		     enums);
	/* order: arg_set_id ascending, the fields in order within an event */
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM (SELECT arg_set_id, lag(arg_set_id) OVER () "
				 "AS prev FROM args) WHERE arg_set_id < prev"),
		     0);
	/* an equality, a range: binary searches; the join from slice a lookup */
	int64_t id = sql_int(db, "SELECT id FROM demo_work_end LIMIT 1 OFFSET 10");
	char q[256];
	snprintf(q, sizeof(q), "SELECT count(*) FROM args WHERE arg_set_id = %lld", (long long)id);
	CHECK(sql_int(db, q) == sql_int(db, "SELECT fields FROM event_table WHERE "
					    "table_name = 'demo_work_end'"));
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM args WHERE arg_set_id > %lld AND arg_set_id <= %lld",
		 (long long)id, (long long)id + 100);
	int64_t in_range = sql_int(db, q);
	snprintf(q, sizeof(q),
		 "SELECT count(*) FROM args WHERE +arg_set_id > %lld AND +arg_set_id <= %lld",
		 (long long)id, (long long)id + 100);
	CHECK(in_range > 0 && in_range == sql_int(db, q));
	sqlite3_stmt *st = NULL;
	CHECK(sqlite3_prepare_v2(db,
				 "EXPLAIN QUERY PLAN SELECT a.key FROM slice s JOIN args a ON "
				 "a.arg_set_id = s.arg_set_id",
				 -1, &st, NULL) == SQLITE_OK);
	int lookup = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 3);
		lookup += d && strstr(d, "SCAN a VIRTUAL TABLE INDEX 1:") != NULL;
	}
	sqlite3_finalize(st);
	CHECK_EQ_U64(lookup, 1);
	sqlite3_close(db);
	import_free(&im);
	rm_tree(tmp);
}

static uint64_t slice_of(struct qy_table *sl, int64_t id)
{
	for (uint64_t r = 0; r < sl->nrows; r++)
		if (ival(sl, "arg_set_id", r) == id)
			return r;
	check_fail_(__FILE__, __LINE__, "slice_of", "no slice for event %lld", (long long)id);
}

static void spans_nested_depth_parent_and_unpaired(void)
{
	make_tmp();
	record("spans", RINGTRACE_SPANS_PROG " 20");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/spans", tmp);
	struct imported im;
	import_dir(&im, dir);
	struct qy_table *sl = table(&im, "slice"), *th = table(&im, "thread"),
			*beg = event_table(&im, "span_begin"), *end = event_table(&im, "span_end");
	CHECK_EQ_U64(beg->nrows, 2 * 20 * 3 + 1);
	CHECK_EQ_U64(end->nrows, 2 * 20 * 3 + 1);
	/* per thread: 3 spans, a mark and a printf a round; one begin unended */
	CHECK_EQ_U64(sl->nrows, 2 * 20 * 5 + 1);
	CHECK_EQ_U64(th->nrows, 2);
	unsigned named = 0;
	for (uint64_t r = 0; r < th->nrows; r++) {
		const char *n = sval(&im, th, "name", r);
		named += !strcmp(n, "spans-main") || !strcmp(n, "spans-worker");
		CHECK(ival(th, "upid", r) == 0);
		CHECK(ival(th, "start_ts", r) <= ival(th, "end_ts", r));
	}
	CHECK_EQ_U64(named, 2);
	unsigned unclosed = 0;
	for (uint64_t b = 0; b < beg->nrows; b++) {
		int64_t level = ival(beg, "level", b);
		uint64_t r = slice_of(sl, ival(beg, "id", b));
		CHECK(strcmp(sval(&im, sl, "name", r), "span_begin") == 0);
		CHECK(ival(sl, "ts", r) == ival(beg, "ts", b));
		CHECK(ival(sl, "utid", r) == ival(beg, "utid", b));
		int64_t dur = ival(sl, "dur", r), depth = ival(sl, "depth", r);
		if (level == 7) { /* the begin never ended */
			CHECK(dur == -1 && depth == 0);
			unclosed++;
			continue;
		}
		CHECK(depth == level);
		int64_t parent = ival(sl, "parent_id", r);
		if (level == 0) {
			CHECK(parent == QY_NULL_INT);
		} else {
			CHECK(parent >= 0 && (uint64_t)parent < sl->nrows);
			CHECK(ival(sl, "depth", (uint64_t)parent) == level - 1);
			CHECK(ival(sl, "utid", (uint64_t)parent) == ival(sl, "utid", r));
			CHECK(ival(sl, "ts", (uint64_t)parent) <= ival(sl, "ts", r));
		}
		CHECK(ival(sl, "id", r) == (int64_t)r);
		/* its end: the same thread's span_end of its level at ts + dur */
		CHECK(dur >= 0);
		unsigned found = 0;
		for (uint64_t e = 0; e < end->nrows; e++)
			found += ival(end, "utid", e) == ival(sl, "utid", r) &&
				 ival(end, "ts", e) == ival(sl, "ts", r) + dur &&
				 ival(end, "level", e) == level;
		CHECKF(found >= 1, "no span_end of level %lld at ts + dur", (long long)level);
	}
	CHECK_EQ_U64(unclosed, 1);
	/* the marks: depth 3, their parent the level-2 span */
	struct qy_table *mark = event_table(&im, "span_mark");
	CHECK_EQ_U64(mark->nrows, 40);
	for (uint64_t m = 0; m < mark->nrows; m++) {
		uint64_t r = slice_of(sl, ival(mark, "id", m));
		CHECK(ival(sl, "dur", r) == 0 && ival(sl, "depth", r) == 3);
		int64_t p = ival(sl, "parent_id", r);
		CHECK(p >= 0 && ival(sl, "depth", (uint64_t)p) == 2);
	}
	CHECK_EQ_U64(stat_of(&im, "slice_unclosed", QY_NULL_INT), 1);
	CHECK_EQ_U64(stat_of(&im, "slice_end_without_begin", QY_NULL_INT), 1);
	CHECK_EQ_U64(stat_of(&im, "slice_depth_exceeded", QY_NULL_INT), 0);
	/* counters: a track per numeric field, a value per event and field */
	struct qy_table *ct = table(&im, "counter_track"), *cn = table(&im, "counter");
	CHECK_EQ_U64(ct->nrows, 2);
	CHECK_EQ_U64(cn->nrows, 2 * 2 * 20);
	double sum[2] = {0, 0};
	for (uint64_t r = 0; r < cn->nrows; r++) {
		int64_t tr = ival(cn, "track_id", r);
		CHECK(tr == 0 || tr == 1);
		sum[tr] += qy_f64(cn, col(cn, "value"))[r];
	}
	int n_track = strcmp(sval(&im, ct, "field", 0), "n") == 0 ? 0 : 1;
	CHECK(strcmp(sval(&im, ct, "event", 0), "span_count") == 0);
	CHECK(sum[n_track] == 2 * 190.0 && sum[1 - n_track] == 2 * 95.0);
	/* printf records: their text, in their table and in args */
	struct qy_table *pf = event_table(&im, "ringtrace_printf");
	CHECK_EQ_U64(pf->nrows, 40);
	unsigned round7 = 0;
	for (uint64_t r = 0; r < pf->nrows; r++)
		round7 += strcmp(sval(&im, pf, "text", r), "round 7") == 0;
	CHECK_EQ_U64(round7, 2);
	sqlite3 *db = sql_open(&im);
	CHECK_EQ_U64(sql_int(db, "SELECT count(*) FROM args a JOIN ringtrace_printf p ON "
				 "a.arg_set_id = p.id WHERE a.key = 'text' AND "
				 "a.value_type = 'string' AND a.string_value = p.text"),
		     40);
	sqlite3_close(db);
	import_free(&im);
	rm_tree(tmp);
}

static void spans_deeper_than_kept_counted(void)
{
	make_tmp();
	record("deep", RINGTRACE_SPANS_PROG " deep");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/deep", tmp);
	struct imported im;
	import_dir(&im, dir);
	struct qy_table *sl = table(&im, "slice");
	CHECK_EQ_U64(sl->nrows, 256);
	CHECK_EQ_U64(stat_of(&im, "slice_depth_exceeded", QY_NULL_INT), 300 - 256);
	CHECK_EQ_U64(stat_of(&im, "slice_unclosed", QY_NULL_INT), 0);
	CHECK_EQ_U64(stat_of(&im, "slice_end_without_begin", QY_NULL_INT), 0);
	/* the kept ones end with their own ends: level i ends at the i-th from last */
	struct qy_table *end = event_table(&im, "span_end");
	for (uint64_t r = 0; r < sl->nrows; r++) {
		CHECK(ival(sl, "depth", r) == (int64_t)r);
		int64_t stop = ival(sl, "ts", r) + ival(sl, "dur", r);
		CHECK(ival(end, "ts", 299 - r) == stop);
	}
	import_free(&im);
	rm_tree(tmp);
}

/* ---- hostile names ---- */

/* Replace the first line of the metadata that starts with from by to. */
static void meta_replace(const char *dir, const char *from, const char *to)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	char *m = slurp(path);
	char *p = strstr(m, from);
	CHECKF(p != NULL && (p == m || p[-1] == '\n'), "no line %s", from);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fwrite(m, 1, (size_t)(p - m), f);
	fputs(to, f);
	fputs(p + strlen(from), f);
	CHECK(fclose(f) == 0);
	free(m);
}

static void hostile_names_safe_and_listed(void)
{
	make_tmp();
	record("hostile", RINGTRACE_SPANS_PROG " 3");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/hostile", tmp);
	/* (names are percent-encoded in the schema block) */
	meta_replace(dir, "event 2 1 span_begin ",
		     "event 2 1 x%22%3B%20DROP%20TABLE%20slice%3B%20-- ");
	meta_replace(dir, "event 3 2 span_end ", "event 3 2 SLICE ");
	meta_replace(dir, "event 4 0 span_mark ", "event 4 0 select ");
	meta_replace(dir, "field level ", "field id ");
	meta_replace(dir, "field round ", "field a%22b ");
	meta_replace(dir, "field n ", "field field_2 ");
	struct imported im;
	import_dir(&im, dir);
	static const char *const builtin[] = {"process", "thread", "slice",       "counter_track",
					      "counter", "args",   "event_table", "event_column",
					      "loss",    "stats"};
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
		struct qy_table *t = table(&im, builtin[i]);
		CHECK(t->ncols >= 4);
	}
	for (uint32_t i = 0; i < qy_table_count(im.s); i++)
		CHECKF(qy_plain_name(qy_table_at(im.s, i)->name), "table %s",
		       qy_table_at(im.s, i)->name);
	struct qy_table *h = event_table(&im, "x\"; DROP TABLE slice; --");
	CHECK(strncmp(h->name, "event_", 6) == 0);
	CHECK_EQ_U64(h->nrows, 2 * 3 * 3 + 1);          /* the begin never ended too */
	CHECK(strcmp(h->cols[4].name, "field_1") == 0); /* "id" is taken */
	struct qy_table *up = event_table(&im, "SLICE"), *sel = event_table(&im, "select");
	CHECK(strncmp(up->name, "event_", 6) == 0 && strncmp(sel->name, "event_", 6) == 0);
	CHECK(up != h && sel != h && up != sel);
	CHECK(strcmp(sel->cols[4].name, "field_1") == 0);
	struct qy_table *cnt = event_table(&im, "span_count");
	CHECK(strcmp(cnt->name, "span_count") == 0);
	/* field_2 is the second field's safe name: the first keeps its own */
	CHECK(strcmp(cnt->cols[4].name, "field_2") == 0 && strcmp(cnt->cols[5].name, "half") == 0);
	/* event_column lists the names as given */
	struct qy_table *ec = table(&im, "event_column");
	unsigned seen = 0;
	for (uint64_t r = 0; r < ec->nrows; r++) {
		const char *f = sval(&im, ec, "field", r), *c = sval(&im, ec, "column_name", r),
			   *t = sval(&im, ec, "table_name", r);
		if (strcmp(f, "a\"b") == 0) {
			CHECK(strcmp(t, sel->name) == 0 && strcmp(c, "field_1") == 0);
			seen++;
		}
		if (strcmp(f, "id") == 0 && strcmp(t, h->name) == 0) {
			CHECK(strcmp(c, "field_1") == 0);
			CHECK(strcmp(sval(&im, ec, "type", r), "uint") == 0);
			seen++;
		}
	}
	CHECK_EQ_U64(seen, 2);
	/* the slices carry the name as it is */
	struct qy_table *sl = table(&im, "slice");
	unsigned hostile = 0;
	for (uint64_t r = 0; r < sl->nrows; r++)
		hostile += strcmp(sval(&im, sl, "name", r), "x\"; DROP TABLE slice; --") == 0;
	CHECK_EQ_U64(hostile, 2 * 3 * 3 + 1);
	import_free(&im);
	rm_tree(tmp);
}

/* ---- collections ---- */

/* Two traces of the same program, one with a field renamed: the events of
 * the same name and fields share a table, the other gets its own. */
static void collection_shares_tables_by_name_and_fields(void)
{
	make_tmp();
	sh("mkdir '%s/coll'", tmp);
	record("coll/a", RINGTRACE_SPANS_PROG " 4");
	record("coll/b", RINGTRACE_SPANS_PROG " 6");
	char dir[256], b[300];
	snprintf(dir, sizeof(dir), "%s/coll", tmp);
	snprintf(b, sizeof(b), "%s/b", dir);
	meta_replace(b, "field round ", "field turn ");
	struct imported im;
	import_dir(&im, dir);
	CHECK(im.c.n == 2 && im.c.is_collection);
	struct qy_table *pr = table(&im, "process");
	CHECK_EQ_U64(pr->nrows, 2);
	CHECK(strcmp(sval(&im, pr, "trace", 0), "a") == 0 &&
	      strcmp(sval(&im, pr, "trace", 1), "b") == 0);
	CHECK(ival(pr, "upid", 1) == 1 && ival(pr, "pid", 0) != ival(pr, "pid", 1));
	/* shared: span_begin holds both traces' rows */
	CHECK_EQ_U64(event_table(&im, "span_begin")->nrows, 2 * 3 * (4 + 6) + 2);
	/* span_mark: two tables, one per layout */
	struct qy_table *et = table(&im, "event_table");
	unsigned marks = 0;
	uint64_t rows = 0;
	for (uint64_t r = 0; r < et->nrows; r++) {
		if (strcmp(sval(&im, et, "event", r), "span_mark") != 0)
			continue;
		marks++;
		struct qy_table *t = table(&im, sval(&im, et, "table_name", r));
		CHECK((uint64_t)ival(et, "count", r) == t->nrows);
		CHECK(strcmp(t->cols[4].name, "round") == 0 ||
		      strcmp(t->cols[4].name, "turn") == 0);
		rows += t->nrows;
	}
	CHECK_EQ_U64(marks, 2);
	CHECK_EQ_U64(rows, 2 * (4 + 6));
	/* each trace's threads belong to its process; event ids unique, in time order */
	struct qy_table *th = table(&im, "thread");
	CHECK_EQ_U64(th->nrows, 4);
	unsigned per[2] = {0, 0};
	for (uint64_t r = 0; r < th->nrows; r++) {
		int64_t u = ival(th, "upid", r);
		CHECK(u == 0 || u == 1);
		per[u]++;
	}
	CHECK(per[0] == 2 && per[1] == 2);
	struct qy_table *sl = table(&im, "slice");
	for (uint64_t r = 1; r < sl->nrows; r++)
		CHECK(ival(sl, "arg_set_id", r) > ival(sl, "arg_set_id", r - 1) &&
		      ival(sl, "ts", r) >= ival(sl, "ts", r - 1));
	CHECK_EQ_U64(stat_of(&im, "slice_unclosed", QY_NULL_INT), 2);
	CHECK_EQ_U64(stat_of(&im, "traces_failed", QY_NULL_INT), 0);
	import_free(&im);
	rm_tree(tmp);
}

/* A collection with the kernel's trace: its events in their tables and
 * args as any other, their utid the task that ran (common_pid), as the
 * kernel's tables (ftrace_event) have it. */
static void kernel_events_in_event_tables_and_args(void)
{
	if (geteuid() != 0)
		CHECK_SKIP("needs root (a tracefs instance)");
	make_tmp();
	char cmd[1024];
	snprintf(
		cmd, sizeof(cmd),
		"'%s' record -q -k sched:sched_switch -k sched:sched_wakeup -o '%s/k' -- %s 5 > '%s/k.out' 2>&1",
		RINGTRACE_TOOL, tmp, RINGTRACE_SPANS_PROG, tmp);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "%s/k.out", tmp);
		char *out = slurp(cmd);
		rm_tree(tmp);
		CHECKF(!strstr(out, "tracefs"), "ringtrace record -k failed: %s", out);
		free(out);
		CHECK_SKIP("ringtrace record -k cannot record kernel events here");
	}
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/k", tmp);
	struct imported im;
	import_dir(&im, dir);
	struct qy_table *fe = table(&im, "ftrace_event"), *sw = event_table(&im, "sched_switch");
	int kt = sched_kernel_trace(&im.c);
	CHECK(kt >= 0);
	CHECK_EQ_U64(fe->nrows, stat_of(&im, "events", kt));
	CHECK(sw->nrows > 0);
	/* every event, the kernel's too, is a row of its table */
	uint64_t rows = 0;
	struct qy_table *et = table(&im, "event_table");
	for (uint64_t r = 0; r < et->nrows; r++)
		rows += (uint64_t)ival(et, "count", r);
	CHECK_EQ_U64(rows, im.r.events);
	CHECK_EQ_U64(im.r.events, stat_of(&im, "events", 0) + stat_of(&im, "events", 1));
	/* each sched_switch row is the ftrace_event row of its event id, same utid */
	uint64_t f = 0;
	for (uint64_t r = 0; r < sw->nrows; r++) {
		while (f < fe->nrows && ival(fe, "arg_set_id", f) < ival(sw, "id", r))
			f++;
		CHECK(f < fe->nrows && ival(fe, "arg_set_id", f) == ival(sw, "id", r));
		CHECK(ival(fe, "utid", f) == ival(sw, "utid", r) &&
		      ival(fe, "ts", f) == ival(sw, "ts", r));
		CHECK(ival(sw, "utid", r) == QY_NULL_INT ||
		      ival(table(&im, "thread"), "tid", (uint64_t)ival(sw, "utid", r)) ==
			      ival(sw, "common_pid", r));
	}
	/* no slices of kernel events */
	struct qy_table *sl = table(&im, "slice");
	for (uint64_t r = 0; r < sl->nrows; r++)
		CHECK(strncmp(sval(&im, sl, "name", r), "sched_", 6) != 0);
	import_free(&im);
	rm_tree(tmp);
}

/* ---- damage ---- */

static void damaged_trace_imported_up_to_the_damage(void)
{
	make_tmp();
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' --seconds 0.1 --lines 0 --threads 1", RINGTRACE_DEMO);
	record("dmg", cmd);
	char dir[256], path[300];
	snprintf(dir, sizeof(dir), "%s/dmg", tmp);
	/* the largest stream file (the worker's), cut inside its second page */
	ringtrace_trace *t;
	CHECK(ringtrace_trace_open(dir, NULL, NULL, &t) == 0);
	const struct ringtrace_trace_stream_info *big = NULL;
	for (uint32_t i = 0; i < ringtrace_trace_stream_count(t); i++)
		if (!big || ringtrace_trace_stream(t, i)->bytes > big->bytes)
			big = ringtrace_trace_stream(t, i);
	CHECK(big && big->bytes > 3 * 65536);
	snprintf(path, sizeof(path), "%s", big->path);
	ringtrace_trace_close(t);
	CHECK(truncate(path, 65536 + 20000) == 0);
	/* what the reader delivers, read alone */
	CHECK(ringtrace_trace_open(dir, NULL, NULL, &t) == 0);
	struct ringtrace_trace_record rec;
	uint64_t events = 0;
	while (ringtrace_trace_next(t, &rec) == 1)
		events += rec.kind == RINGTRACE_TRACE_EVENT;
	uint64_t errors = ringtrace_trace_errors(t);
	ringtrace_trace_close(t);
	CHECK(errors > 0 && events > 0);
	struct imported im;
	import_dir(&im, dir);
	CHECK_EQ_U64(im.r.events, events);
	CHECK_EQ_U64(im.r.errors, errors);
	CHECK_EQ_U64(stat_of(&im, "trace_errors", 0), errors);
	CHECK_EQ_U64(stat_of(&im, "events", 0), events);
	uint64_t rows = 0;
	struct qy_table *et = table(&im, "event_table");
	for (uint64_t r = 0; r < et->nrows; r++)
		rows += (uint64_t)ival(et, "count", r);
	CHECK_EQ_U64(rows, events);
	import_free(&im);
	rm_tree(tmp);
}

/* ---- losses ---- */

static void loss_rows_sum_to_stat_dropped_and_overrun(void)
{
	make_tmp();
	char dir[256], cmd[512], path[300];
	for (int overwrite = 0; overwrite < 2; overwrite++) {
		snprintf(dir, sizeof(dir), "%s/loss%d", tmp, overwrite);
		sh("'%s' record -q %s --buffer-size 64k --page-size 4k -o '%s' -- '%s' --seconds 0.1 --lines 0 > /dev/null 2>&1",
		   RINGTRACE_TOOL, overwrite ? "--overwrite" : "", dir, RINGTRACE_DEMO);
		snprintf(cmd, sizeof(cmd), "'%s' stat '%s' > '%s/stat%d.txt'", RINGTRACE_TOOL, dir,
			 tmp, overwrite);
		sh("%s", cmd);
		snprintf(path, sizeof(path), "%s/stat%d.txt", tmp, overwrite);
		char *stat = slurp(path);
		uint64_t tot[3];
		stat_totals(stat, tot);
		CHECKF(tot[1] + tot[2] > 0, "nothing was lost:\n%s", stat);
		struct imported im;
		import_dir(&im, dir);
		struct qy_table *lo = table(&im, "loss");
		uint64_t dropped = 0, overrun = 0;
		for (uint64_t r = 0; r < lo->nrows; r++) {
			dropped += (uint64_t)ival(lo, "dropped", r);
			overrun += (uint64_t)ival(lo, "overrun", r);
			CHECK(ival(lo, "upid", r) == 0 && ival(lo, "stream", r) > 0);
			CHECK(ival(lo, "utid", r) >= 0);
		}
		CHECK(lo->nrows > 0);
		CHECK_EQ_U64(dropped, tot[1]);
		CHECK_EQ_U64(overrun, tot[2]);
		CHECK_EQ_U64(stat_of(&im, "events_dropped", 0), tot[1]);
		CHECK_EQ_U64(stat_of(&im, "events_overrun", 0), tot[2]);
		CHECK_EQ_U64(stat_of(&im, "events", 0), tot[0]);
		import_free(&im);
		free(stat);
	}
	rm_tree(tmp);
}

/* ---- chunks ---- */

struct chunks {
	uint64_t rows[64]; /* per table, every chunk's together */
	uint64_t calls, last;
	int64_t *late; /* slice id -> dur given late (-2: none) */
	uint64_t nlate, nslices;
};

static int on_chunk(void *arg, struct qy_store *s, int last)
{
	struct chunks *ch = arg;
	ch->calls++;
	ch->last += last != 0;
	CHECK(qy_table_count(s) <= 64);
	for (uint32_t i = 0; i < qy_table_count(s); i++) {
		struct qy_table *t = qy_table_at(s, i);
		ch->rows[i] += t->nrows;
		qy_table_clear(t);
	}
	return 0;
}

static int on_late(void *arg, int64_t id, int64_t dur)
{
	struct chunks *ch = arg;
	CHECK(id >= 0 && (uint64_t)id < ch->nslices && ch->late[id] == -2 && dur >= 0);
	ch->late[id] = dur;
	ch->nlate++;
	return 0;
}

static void chunks_give_every_row_once_and_late_durations(void)
{
	make_tmp();
	record("chunks", RINGTRACE_SPANS_PROG " 10");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/chunks", tmp);
	struct imported whole, parts;
	import_dir(&whole, dir);
	struct qy_table *sl = table(&whole, "slice");
	struct chunks ch;
	memset(&ch, 0, sizeof(ch));
	ch.nslices = sl->nrows;
	CHECK((ch.late = malloc(ch.nslices * sizeof(*ch.late))) != NULL);
	for (uint64_t i = 0; i < ch.nslices; i++)
		ch.late[i] = -2;
	struct qy_import_opts o;
	memset(&o, 0, sizeof(o));
	o.chunk_events = 3;
	o.chunk = on_chunk;
	o.late_dur = on_late;
	o.arg = &ch;
	import_opts(&parts, dir, &o);
	CHECKF(parts.rc == 0, "%s", parts.err);
	CHECK_EQ_U64(ch.last, 1);
	CHECK_EQ_U64(ch.calls, parts.r.records / 3 + 1);
	CHECK_EQ_U64(qy_table_count(parts.s), qy_table_count(whole.s));
	for (uint32_t i = 0; i < qy_table_count(whole.s); i++)
		CHECKF(ch.rows[i] == qy_table_at(whole.s, i)->nrows,
		       "table %s: %" PRIu64 " rows in chunks, %" PRIu64 " at once",
		       qy_table_at(whole.s, i)->name, ch.rows[i], qy_table_at(whole.s, i)->nrows);
	/* every slice ended after its row went out got its duration late, the
	 * one never ended none */
	CHECK(ch.nlate > 0);
	for (uint64_t i = 0; i < ch.nslices; i++)
		if (ch.late[i] != -2)
			CHECK(ch.late[i] == ival(sl, "dur", i));
	import_free(&whole);
	import_free(&parts);
	free(ch.late);
	rm_tree(tmp);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(query_import_demo_rows_and_sums_equal_stat_and_report, demo_rows_and_sums_equal_stat_and_report),
	CHECK_CASE(query_import_args_computed_from_event_tables, args_computed_from_event_tables),
	CHECK_CASE(query_import_spans_nested_depth_parent_and_unpaired, spans_nested_depth_parent_and_unpaired),
	CHECK_CASE(query_import_spans_deeper_than_kept_counted, spans_deeper_than_kept_counted),
	CHECK_CASE(query_import_hostile_names_safe_and_listed, hostile_names_safe_and_listed),
	CHECK_CASE(query_import_collection_shares_tables_by_name_and_fields, collection_shares_tables_by_name_and_fields),
	CHECK_CASE(query_import_kernel_events_in_event_tables_and_args, kernel_events_in_event_tables_and_args),
	CHECK_CASE(query_import_damaged_trace_imported_up_to_the_damage, damaged_trace_imported_up_to_the_damage),
	CHECK_CASE(query_import_loss_rows_sum_to_stat_dropped_and_overrun, loss_rows_sum_to_stat_dropped_and_overrun),
	CHECK_CASE(query_import_chunks_give_every_row_once_and_late_durations, chunks_give_every_row_once_and_late_durations),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
