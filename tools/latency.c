/*
 * ringtrace latency DIR --from EVENT --to EVENT: the latency between a
 * start and a stop event, paired by a key field (or by thread), as a
 * distribution per group: what ftrace's synthetic events and hist
 * triggers answer, from a trace.
 *
 * The pairing is the SQL layer's (src/query/pair_vtab.c): the trace is
 * imported into the query tables and the statement `--sql` prints for
 * `ringtrace query`, SELECT ... FROM pairs(...), run on them (its names
 * bound), so that the two cannot pair differently. The statistics, the
 * histogram and the text are here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_api.h"
#include "args.h"
#include "base/base.h"
#include "output.h"
#include "query/query_api.h"
#include "ringtrace/error.h"
#include "verbs.h"

static const char *prog = "ringtrace latency";

/* The longest pairs and unpaired events shown per group: at most this. */
#define LAT_TOP_MAX 1000

static const char latency_help[] =
	"usage: ringtrace latency DIR --from EVENT --to EVENT [--key FIELD]\n"
	"                         [--stop-key FIELD] [--by FIELD] [--top N] [--sql]\n"
	"\n"
	"The latency from each EVENT of --from (a start) to the EVENT of --to (a\n"
	"stop) that closes it, in the trace or collection DIR.\n"
	"\n"
	"Pairing: per value of the key, in time order, a stop pairs with the most\n"
	"recent start not yet paired (nested starts close in reverse order); a stop\n"
	"with no start open, and a start never stopped, are unpaired: counted and\n"
	"shown. The key is the field --key of both events (--stop-key: the stop's\n"
	"own field when its name differs), or the thread when no --key is given.\n"
	"\n"
	"Per group (--by FIELD: a field of the start event; default one group):\n"
	"the count and the latency's p50, p90, p99, p99.9 and maximum in\n"
	"microseconds, exact: the nearest rank, the latency at rank ceil(p/100 *\n"
	"count) of the group's sorted latencies; a log2 histogram as ftrace's hist\n"
	"prints it ('~ 2^N': more than 2^(N-1) us, at most 2^N us; ~ 2^0 holds all\n"
	"up to 1 us); the N longest pairs with their threads, start and stop time\n"
	"(SECONDS.MICROS as `ringtrace report` prints them: the start rounded\n"
	"down, the stop up, so that `report DIR --from START --to STOP` shows\n"
	"both). Then the unpaired ones (the N earliest of each), and the events\n"
	"the trace lost where they may have broken pairs.\n"
	"\n"
	"  --top N   longest pairs per group and unpaired events shown (default 5,\n"
	"            at most 1000; 0: none)\n"
	"  --sql     print the pairs statement (SELECT ... FROM pairs(...), for\n"
	"            `ringtrace query`, docs/query.md) instead of running it\n"
	"\n"
	"Names and values from the trace are printed with control bytes as \\xNN.\n"
	"Exits 2 on a usage error (an event or field not in the trace included),\n"
	"1 if any damage was found (after printing everything readable).\n";

struct lat_opts {
	const char *dir;
	struct qy_pair_spec sp;
	uint64_t top;
	int sql;
};

/* The command line: -1 with *o filled, or the exit status. */
static int lat_args(int argc, char **argv, struct lat_opts *o)
{
	char why[200];
	*o = (struct lat_opts){.top = 5};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (cmd_is_help(a)) {
			fputs(latency_help, stdout);
			return 0;
		}
		const char **str = strcmp(a, "--from") == 0       ? &o->sp.from
				   : strcmp(a, "--to") == 0       ? &o->sp.to
				   : strcmp(a, "--key") == 0      ? &o->sp.key
				   : strcmp(a, "--stop-key") == 0 ? &o->sp.stop_key
				   : strcmp(a, "--by") == 0       ? &o->sp.by
								  : NULL;
		if (str || strcmp(a, "--top") == 0) {
			if (i + 1 >= argc)
				return arg_usage_error("latency", "%s needs a value", a);
			const char *v = argv[++i];
			if (str)
				*str = v;
			else if (arg_u64(v, LAT_TOP_MAX, &o->top, why, sizeof(why)) < 0)
				return arg_usage_error("latency", "--top: %s", why);
		} else if (strcmp(a, "--sql") == 0) {
			o->sql = 1;
		} else if (a[0] == '-' && a[1]) {
			return arg_usage_error("latency", "unknown option %s", a);
		} else if (!o->dir) {
			o->dir = a;
		} else {
			return arg_usage_error("latency", "unexpected argument %s", a);
		}
	}
	if (!o->dir)
		return arg_usage_error("latency", "%s", "missing trace directory");
	if (!o->sp.from || !o->sp.to)
		return arg_usage_error("latency", "%s",
				       "--from EVENT and --to EVENT are needed (the start and the "
				       "stop)");
	if (o->sp.stop_key && !o->sp.key)
		return arg_usage_error("latency", "%s",
				       "--stop-key needs --key (the start's field)");
	return -1;
}

/* A time as report prints it, SECONDS.MICROS, rounded down or up. */
static const char *lat_when(int64_t ns, int up, char *buf, size_t n)
{
	uint64_t t = ns < 0 ? 0 : (uint64_t)ns;
	if (up)
		t += 999;
	snprintf(buf, n, "%" PRIu64 ".%06" PRIu64, t / 1000000000u, t % 1000000000u / 1000u);
	return buf;
}

static double lat_us(int64_t ns)
{
	return (double)ns / 1e3;
}

/* A group's name: its value, "NULL", or "all" without --by. */
static const char *lat_group_name(const struct lat_opts *o, const struct qy_pair_group *g)
{
	return !o->sp.by ? "all" : g->grp ? rt_esc(g->grp) : "NULL";
}

/* The log2 bucket of a latency, in microseconds: the smallest N >= 0 with
 * ns <= 2^N * 1000 (ftrace's .log2 rounds up to a power of two). */
static unsigned lat_bucket(int64_t ns)
{
	unsigned b = 0;
	while (b < 62 && (uint64_t)ns > (1000ull << b))
		b++;
	return b;
}

static void lat_histogram(const struct lat_opts *o, const struct qy_pair_group *g)
{
	printf("\n# %s%s%s: latency histogram (microseconds, log2: '~ 2^N' holds more than "
	       "2^(N-1), at most 2^N)\n\n",
	       o->sp.by ? rt_esc(o->sp.by) : "", o->sp.by ? "=" : "", lat_group_name(o, g));
	uint64_t entries = 0;
	for (uint64_t i = 0; i < g->n;) {
		unsigned b = lat_bucket(g->lat[i]);
		uint64_t j = i;
		while (j < g->n && lat_bucket(g->lat[j]) == b)
			j++;
		printf("{ latency: ~ 2^%-2u } hitcount: %10" PRIu64 "\n", b, j - i);
		entries++;
		i = j;
	}
	printf("\nTotals:\n    Hits: %" PRIu64 "\n    Entries: %" PRIu64 "\n", g->n, entries);
}

/* The key of a pair or an unpaired event: "FIELD=VALUE", nothing by thread. */
static void lat_key(const struct lat_opts *o, const struct qy_pair_item *it)
{
	if (o->sp.key)
		printf("  %s=%s", rt_esc(o->sp.key), it->key ? rt_esc(it->key) : "NULL");
}

static void lat_thread(const struct qy_pair_thread *t)
{
	if (t->tid >= 0)
		printf("%" PRId64 " %s", t->tid, t->name[0] ? rt_esc(t->name) : "?");
	else
		printf("?");
}

static void lat_longest(const struct lat_opts *o, const struct qy_pair_group *g)
{
	if (!g->ntop)
		return;
	printf("\n# %s%s%s: the longest pair%s (latency, start .. stop, thread, key)\n",
	       o->sp.by ? rt_esc(o->sp.by) : "", o->sp.by ? "=" : "", lat_group_name(o, g),
	       g->ntop == 1 ? "" : "s");
	for (uint32_t i = 0; i < g->ntop; i++) {
		const struct qy_pair_item *it = &g->top[i];
		char b1[40], b2[40];
		printf("%3u %12.3f us  %s .. %s  ", i + 1, lat_us(it->dur),
		       lat_when(it->ts, 0, b1, sizeof(b1)),
		       lat_when(it->stop_ts, 1, b2, sizeof(b2)));
		lat_thread(&it->start_thread);
		if (it->stop_thread.utid != it->start_thread.utid) {
			printf(" -> ");
			lat_thread(&it->stop_thread);
		}
		lat_key(o, it);
		printf("%s\n", it->lossy ? "  (events were lost within it)" : "");
	}
}

static void lat_unpaired(const struct lat_opts *o, const char *what, uint64_t n,
			 const struct qy_pair_item *v, uint32_t nv, int stop)
{
	printf("%s: %" PRIu64 "%s\n", what, n,
	       nv && nv < n   ? " (the earliest shown)"
	       : nv           ? ""
	       : n && !o->top ? " (--top 0: none shown)"
			      : "");
	for (uint32_t i = 0; i < nv; i++) {
		const struct qy_pair_item *it = &v[i];
		char b[40];
		printf("    %s  ", lat_when(stop ? it->stop_ts : it->ts, 0, b, sizeof(b)));
		lat_thread(stop ? &it->stop_thread : &it->start_thread);
		lat_key(o, it);
		if (!stop && o->sp.by)
			printf("  %s=%s", rt_esc(o->sp.by), it->grp ? rt_esc(it->grp) : "NULL");
		printf("%s\n", !it->lossy ? ""
			       : stop     ? "  (events were lost before it)"
					  : "  (events were lost after it)");
	}
}

static void lat_print(const struct lat_opts *o, const struct qy_pairs *p)
{
	printf("latency from %s to %s", rt_esc(o->sp.from), rt_esc(o->sp.to));
	if (o->sp.key && o->sp.stop_key)
		printf(", paired by %s = %s", rt_esc(o->sp.key), rt_esc(o->sp.stop_key));
	else if (o->sp.key)
		printf(", paired by %s", rt_esc(o->sp.key));
	else
		printf(", paired by thread");
	if (o->sp.by)
		printf(", grouped by %s", rt_esc(o->sp.by));
	printf("\n%" PRIu64 " pair%s, %" PRIu64 " start%s never stopped, %" PRIu64
	       " stop%s never started\n",
	       p->npairs, p->npairs == 1 ? "" : "s", p->nstart_only, p->nstart_only == 1 ? "" : "s",
	       p->nstop_only, p->nstop_only == 1 ? "" : "s");
	printf("percentiles: nearest rank (the latency at rank ceil(p/100 * count) of the "
	       "sorted ones)\n\n");
	printf("%-16s %10s %12s %12s %12s %12s %12s\n", o->sp.by ? "group" : "", "count", "p50_us",
	       "p90_us", "p99_us", "p99.9_us", "max_us");
	static const unsigned pm[] = {500, 900, 990, 999, 1000};
	for (uint32_t i = 0; i < p->ng; i++) {
		const struct qy_pair_group *g = &p->g[i];
		printf("%-16s %10" PRIu64, lat_group_name(o, g), g->n);
		for (size_t k = 0; k < sizeof(pm) / sizeof(pm[0]); k++)
			printf(" %12.3f", lat_us(qy_pair_percentile(g->lat, g->n, pm[k])));
		printf("\n");
	}
	for (uint32_t i = 0; i < p->ng; i++) {
		lat_histogram(o, &p->g[i]);
		lat_longest(o, &p->g[i]);
	}
	printf("\n");
	lat_unpaired(o, "starts never stopped", p->nstart_only, p->starts, p->nstarts, 0);
	lat_unpaired(o, "stops never started", p->nstop_only, p->stops, p->nstops, 1);
	if (p->loss_places) {
		uint64_t lossy = 0;
		for (uint32_t i = 0; i < p->ng; i++)
			lossy += p->g[i].lossy;
		printf("\nnote: the trace lost %" PRIu64 " event%s in %" PRIu64 " place%s: %" PRIu64
		       " of the pairs have a loss within them (they may pair "
		       "the wrong events); %" PRIu64
		       " of the starts never stopped have a loss after "
		       "them and %" PRIu64 " of the stops never started one before them (their "
		       "partners may be among the lost)\n",
		       p->lost_events, p->lost_events == 1 ? "" : "s", p->loss_places,
		       p->loss_places == 1 ? "" : "s", lossy, p->start_lossy, p->stop_lossy);
	}
}

static void lat_on_error(void *arg, const char *msg)
{
	(void)arg;
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog, rt_esc(msg));
}

/*
 * The trace imported and its tables in db, the pairs query made and run
 * (or printed): the exit status.
 */
static int lat_run(const struct lat_opts *o, const struct coll *c, uint64_t *errors)
{
	char err[1024];
	struct qy_store *s = qy_store_new();
	sqlite3 *db = NULL;
	struct qy_import_opts io = {.on_error = lat_on_error};
	struct qy_import_result r = {0};
	char *sql = NULL;
	int rc = 1, e;
	if (!s) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	if ((e = qy_import(s, c, &io, &r, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, rt_esc(err));
		goto out;
	}
	*errors = r.errors;
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL) != SQLITE_OK ||
	    qy_sqlite_attach(db, s, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, db ? rt_esc(err) : "out of memory");
		goto out;
	}
	if ((e = qy_pair_sql(db, &o->sp, &sql, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, rt_esc(err));
		rc = e == -RINGTRACE_ENOENT ? 2 : 1;
		goto out;
	}
	if (o->sql) {
		fputs(sql, stdout);
		rc = 0;
		goto out;
	}
	struct qy_pairs p;
	if (qy_pairs_collect(db, &o->sp, (uint32_t)o->top, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, rt_esc(err));
		goto out;
	}
	lat_print(o, &p);
	qy_pairs_free(&p);
	rc = 0;
out:
	free(sql);
	sqlite3_close(db);
	qy_store_free(s);
	return rc;
}

int verb_latency(int argc, char **argv)
{
	struct lat_opts o;
	int st = lat_args(argc, argv, &o);
	if (st >= 0)
		return st;
	struct coll c;
	if (coll_open(o.dir, prog, lat_on_error, &c) < 0)
		return 1;
	static char obuf[1 << 16];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	uint64_t errors = 0;
	int rc = lat_run(&o, &c, &errors);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
		rc = rc ? rc : 1;
	}
	if (rc == 0 && (c.failed || errors))
		rc = 1;
	for (uint32_t i = 0; i < c.n; i++)
		if (out_trace_errors(c.t[i], c.dirs[i]) && rc == 0)
			rc = 1;
	coll_close(&c);
	return rc;
}
