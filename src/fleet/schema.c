/*
 * The fleet's tables (fleet_api.h): their ClickHouse columns, the DDL that
 * makes them on one server or on every shard of a cluster, and the check
 * that the tables a load writes into are the ones this loader makes.
 *
 * Columns: the four leading ones (host, trace_uuid, load_id, day), then
 * the query layer's table's columns in its order. A column is Nullable
 * where the store may hold NULL in it (a row's column never set, an
 * unknown cpu, utid or upid, a NaN), plain where every row sets it: a
 * Nullable costs a byte mask per row and keeps the column out of a
 * sorting key.
 *
 * Engines: MergeTree partitioned by month of the trace's day (toYYYYMM:
 * few partitions, whole months dropped at once) and sorted by the trace
 * first, so that one trace's rows are one range of the sorting key,
 * found from the primary index (a query names traces or hosts, and then
 * time); `loads` is a ReplacingMergeTree on (trace_uuid, load_id) whose
 * version column keeps the latest state of each load. Only what
 * ClickHouse 18.16 knows: no LowCardinality, Map, DateTime64 or TTL,
 * the PARTITION BY / ORDER BY syntax (valid in every later release).
 *
 * The DDL reaches a cluster's shards by ON CLUSTER, or where the cluster
 * has no distributed DDL (no ZooKeeper) by running each statement on
 * every server given, which must then hold every shard (system.clusters,
 * is_local): a shard with no server given is named.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_api.h"

#define LEAD                                                                 \
	{"host", "String"}, {"trace_uuid", "String"}, {"load_id", "UInt64"}, \
	{                                                                    \
		"day", "Date"                                                \
	}

#define NI64 "Nullable(Int64)"
#define NSTR "Nullable(String)"

static const struct fl_coldef c_process[] = {
	LEAD,           {"upid", "Int64"},    {"pid", NI64},
	{"name", NSTR}, {"executable", NSTR}, {"hostname", NSTR},
	{"uuid", NSTR}, {"trace", NSTR},
};
static const struct fl_coldef c_thread[] = {
	LEAD,           {"utid", "Int64"},  {"tid", "Int64"}, {"name", NSTR},
	{"upid", NI64}, {"start_ts", NI64}, {"end_ts", NI64},
};
static const struct fl_coldef c_slice[] = {
	LEAD,
	{"id", "Int64"},
	{"ts", "Int64"},
	{"dur", "Int64"},
	{"utid", NI64},
	{"name", NSTR},
	{"depth", "Int64"},
	{"parent_id", NI64},
	{"arg_set_id", NI64},
	{"cpu", NI64},
};
static const struct fl_coldef c_counter_track[] = {
	LEAD, {"id", "Int64"}, {"name", NSTR}, {"event", NSTR}, {"field", NSTR},
};
static const struct fl_coldef c_counter[] = {
	LEAD,
	{"id", "Int64"},
	{"ts", "Int64"},
	{"track_id", "Int64"},
	{"value", "Nullable(Float64)"},
	{"utid", NI64},
};
static const struct fl_coldef c_args[] = {
	LEAD,
	{"arg_set_id", "Int64"},
	{"key", "String"},
	{"int_value", NI64},
	{"string_value", NSTR},
	{"real_value", "Nullable(Float64)"},
	{"value_type", "String"},
};
static const struct fl_coldef c_event[] = {
	LEAD, {"id", "Int64"}, {"ts", "Int64"}, {"utid", NI64}, {"cpu", NI64}, {"name", "String"},
};
static const struct fl_coldef c_ftrace_event[] = {
	LEAD,           {"id", "Int64"}, {"ts", "Int64"},      {"cpu", NI64},
	{"utid", NI64}, {"name", NSTR},  {"arg_set_id", NI64},
};
static const struct fl_coldef c_sched_slice[] = {
	LEAD,          {"id", "Int64"}, {"ts", "Int64"},     {"dur", "Int64"},
	{"cpu", NI64}, {"utid", NI64},  {"end_state", NSTR}, {"priority", NI64},
};
static const struct fl_coldef c_thread_state[] = {
	LEAD,           {"id", "Int64"}, {"ts", "Int64"}, {"dur", "Int64"},
	{"utid", NI64}, {"state", NSTR}, {"cpu", NI64},   {"waker_utid", NI64},
};
static const struct fl_coldef c_loss[] = {
	LEAD,
	{"ts", "Int64"},
	{"upid", NI64},
	{"utid", NI64},
	{"stream", NI64},
	{"dropped", NI64},
	{"overrun", NI64},
};
static const struct fl_coldef c_stats[] = {
	LEAD,
	{"name", "String"},
	{"idx", NI64},
	{"severity", NSTR},
	{"source", NSTR},
	{"value", NI64},
	{"description", NSTR},
};
static const struct fl_coldef c_loads[] = {
	{"trace_uuid", "String"},  {"load_id", "UInt64"},       {"version", "UInt64"},
	{"digest", "String"},      {"host", "String"},          {"trace", "String"},
	{"state", "String"},       {"started", "DateTime"},     {"finished", "DateTime"},
	{"loaded_by", "String"},   {"loader_host", "String"},   {"clock_offset", NI64},
	{"rows", "Array(UInt64)"}, {"tables", "Array(String)"}, {"events", "UInt64"},
	{"lost", "UInt64"},
};

#define MT "ENGINE = MergeTree() PARTITION BY toYYYYMM(day) ORDER BY "
#define T(name, key)                                                            \
	{                                                                       \
#name, c_##name, sizeof(c_##name) / sizeof(c_##name[0]), MT key \
	}

static const struct fl_tabledef tables[] = {
	T(process, "(trace_uuid, upid)"),
	T(thread, "(trace_uuid, utid)"),
	T(slice, "(trace_uuid, ts)"),
	T(counter_track, "(trace_uuid, id)"),
	T(counter, "(trace_uuid, ts)"),
	T(args, "(trace_uuid, arg_set_id)"),
	T(event, "(trace_uuid, ts)"),
	T(ftrace_event, "(trace_uuid, ts)"),
	T(sched_slice, "(trace_uuid, ts)"),
	T(thread_state, "(trace_uuid, ts)"),
	T(loss, "(trace_uuid, ts)"),
	T(stats, "(trace_uuid, name)"),
	/* one row per load and state; the latest version is the load's state */
	{"loads", c_loads, sizeof(c_loads) / sizeof(c_loads[0]),
	 "ENGINE = ReplacingMergeTree(version) ORDER BY (trace_uuid, load_id)"},
};

#define NTABLES (sizeof(tables) / sizeof(tables[0]))

uint32_t fl_table_count(void)
{
	return NTABLES;
}

const struct fl_tabledef *fl_table(uint32_t i)
{
	return i < NTABLES ? &tables[i] : NULL;
}

const struct fl_tabledef *fl_table_find(const char *name)
{
	for (uint32_t i = 0; i < NTABLES; i++)
		if (strcmp(tables[i].name, name) == 0)
			return &tables[i];
	return NULL;
}

int fl_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n < 1 || n > 64 || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}

/* ---- statements on every shard ---- */

/* A statement's text, grown as it is written. */
struct sql {
	char *p;
	size_t len, cap;
	int nomem;
};

static void sql_add(struct sql *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sql_add(struct sql *q, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !q->nomem; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(q->p ? q->p + q->len : NULL, q->p ? q->cap - q->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			q->nomem = 1;
			return;
		}
		if (q->p && q->len + (size_t)n < q->cap) {
			q->len += (size_t)n;
			return;
		}
		size_t cap = (q->cap ? q->cap : 256) * 2 + (size_t)n;
		char *p = realloc(q->p, cap);
		if (!p) {
			q->nomem = 1;
			return;
		}
		if (!q->p)
			p[0] = 0;
		q->p = p;
		q->cap = cap;
	}
}

/*
 * Whether a server's answer to ON CLUSTER says it has no distributed DDL:
 * 18.16 without ZooKeeper, and later releases' words for a server without
 * ZooKeeper or without <distributed_ddl>. Only these: a cluster that has
 * distributed DDL answers errors of its own that name ZooKeeper or the
 * distributed_ddl_task_timeout setting (a shard's server down: "Watching
 * task ... is executing longer than distributed_ddl_task_timeout"), and
 * running the statement on the servers given instead would hide them
 * behind "add --clickhouse URL for a server of that shard".
 */
static int no_ddl_queue(const char *msg)
{
	return strstr(msg, "DDL background thread is not initialized") ||
	       strstr(msg, "no DistributedDDL configuration") ||
	       strstr(msg, "no Zookeeper configuration");
}

/* Run sql on one server (its errors name the server: ch.c). */
static int exec_on(struct fl_ch *ch, const char *sql, struct fl_buf *out, char *err, size_t errsize)
{
	return fl_ch_exec(ch, sql, NULL, out, err, errsize);
}

/* The lines of a TSV answer: each line's first field as a number. */
static int tsv_numbers(const struct fl_buf *b, uint64_t *v, uint32_t max, uint32_t *n)
{
	*n = 0;
	const char *p = (const char *)b->p, *end = p + b->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (nl > p) {
			if (*n == max)
				return -1;
			char *e;
			v[(*n)++] = strtoull(p, &e, 10);
		}
		p = nl + 1;
	}
	return 0;
}

#define MAX_SHARDS 1024u

/*
 * The servers given cover every shard of the cluster: each one's shard
 * is the one system.clusters says is local to it. 0; FL_EUSAGE naming the
 * shard no server given holds (and its hosts), or the cluster unknown.
 */
static int cover_shards(const struct fl_target *t, char *err, size_t errsize)
{
	char sql[512];
	struct fl_buf b = {0};
	uint64_t *all = calloc(MAX_SHARDS, sizeof(*all)), mine[MAX_SHARDS];
	uint32_t nall = 0, nmine;
	int rc = all ? 0 : FL_ENOMEM, *have = calloc(MAX_SHARDS, sizeof(*have));
	if (!have)
		rc = FL_ENOMEM;
	/* the names are checked (fl_name_ok): a plain literal */
	snprintf(sql, sizeof(sql),
		 "SELECT DISTINCT shard_num FROM system.clusters WHERE cluster = '%s' "
		 "ORDER BY shard_num FORMAT TabSeparated",
		 t->cluster);
	if (!rc && !(rc = exec_on(t->chs[0], sql, &b, err, errsize)) &&
	    tsv_numbers(&b, all, MAX_SHARDS, &nall) < 0)
		rc = FL_ESERVER;
	if (!rc && !nall) {
		snprintf(err, errsize,
			 "%s: no cluster '%s' in its system.clusters (its config's remote_servers)",
			 fl_ch_where(t->chs[0]), t->cluster);
		rc = FL_EUSAGE;
	}
	snprintf(sql, sizeof(sql),
		 "SELECT shard_num FROM system.clusters WHERE cluster = '%s' AND is_local = 1 "
		 "FORMAT TabSeparated",
		 t->cluster);
	for (uint32_t i = 0; !rc && i < t->nch; i++) {
		if ((rc = exec_on(t->chs[i], sql, &b, err, errsize)) < 0)
			break;
		if (tsv_numbers(&b, mine, MAX_SHARDS, &nmine) < 0)
			rc = FL_ESERVER;
		for (uint32_t k = 0; k < nmine; k++)
			for (uint32_t j = 0; j < nall; j++)
				if (all[j] == mine[k])
					have[j] = 1;
	}
	for (uint32_t j = 0; !rc && j < nall; j++) {
		if (have[j])
			continue;
		char hosts[256] = "";
		snprintf(sql, sizeof(sql),
			 "SELECT concat(host_name, ':', toString(port)) FROM system.clusters "
			 "WHERE cluster = '%s' AND shard_num = %" PRIu64 " FORMAT TabSeparated",
			 t->cluster, all[j]);
		if (fl_ch_exec(t->chs[0], sql, NULL, &b, NULL, 0) == 0) {
			size_t n = b.len < sizeof(hosts) - 1 ? b.len : sizeof(hosts) - 1;
			for (size_t k = 0; k < n; k++)
				hosts[k] = b.p[k] == '\n' || b.p[k] == '\t' ? ' ' : (char)b.p[k];
			hosts[n] = 0;
			while (n && hosts[n - 1] == ' ')
				hosts[--n] = 0;
		}
		snprintf(
			err, errsize,
			"cluster '%s' has no distributed DDL (ON CLUSTER needs ZooKeeper), so each "
			"statement runs on every server given, but shard %" PRIu64
			" (%s) has none of them: add --clickhouse URL for a server of that shard",
			t->cluster, all[j], hosts[0] ? hosts : "hosts unknown");
		rc = FL_EUSAGE;
	}
	fl_buf_free(&b);
	free(all);
	free(have);
	return rc;
}

int fl_ddl(const struct fl_target *t, const char *head, const char *tail, char *err, size_t errsize)
{
	struct sql q = {0};
	int rc;
	if (!t->cluster) {
		sql_add(&q, "%s %s", head, tail);
		rc = q.nomem ? FL_ENOMEM : exec_on(t->chs[0], q.p, NULL, err, errsize);
		free(q.p);
		return rc;
	}
	sql_add(&q, "%s ON CLUSTER `%s` %s", head, t->cluster, tail);
	char e[512] = "";
	rc = q.nomem ? FL_ENOMEM : fl_ch_exec(t->chs[0], q.p, NULL, NULL, e, sizeof(e));
	free(q.p);
	if (rc != FL_ESERVER || !no_ddl_queue(e)) {
		if (rc < 0)
			snprintf(err, errsize, "%s", e);
		return rc;
	}
	/* no distributed DDL: the statement on every server given, which must
	 * then hold every shard */
	if ((rc = cover_shards(t, err, errsize)) < 0)
		return rc;
	q = (struct sql){0};
	sql_add(&q, "%s %s", head, tail);
	for (uint32_t i = 0; !q.nomem && i < t->nch && rc == 0; i++)
		rc = exec_on(t->chs[i], q.p, NULL, err, errsize);
	if (q.nomem)
		rc = FL_ENOMEM;
	free(q.p);
	return rc;
}

/* ---- creating and checking ---- */

static void col_list(struct sql *q, const struct fl_tabledef *d)
{
	sql_add(q, "(");
	for (uint32_t c = 0; c < d->ncols; c++)
		sql_add(q, "%s`%s` %s", c ? ", " : "", d->cols[c].name, d->cols[c].type);
	sql_add(q, ")");
}

int fl_create(const struct fl_target *t, char *err, size_t errsize)
{
	char head[256];
	if (!fl_name_ok(t->database) || (t->cluster && !fl_name_ok(t->cluster))) {
		snprintf(err, errsize, "a database or cluster name is letters, digits and '_'");
		return FL_EUSAGE;
	}
	snprintf(head, sizeof(head), "CREATE DATABASE IF NOT EXISTS `%s`", t->database);
	int rc = fl_ddl(t, head, "", err, errsize);
	for (uint32_t i = 0; rc == 0 && i < NTABLES; i++) {
		const struct fl_tabledef *d = &tables[i];
		struct sql q = {0};
		col_list(&q, d);
		sql_add(&q, " %s", d->engine_tail);
		snprintf(head, sizeof(head), "CREATE TABLE IF NOT EXISTS `%s`.`%s%s`", t->database,
			 d->name, t->cluster ? "_local" : "");
		rc = q.nomem ? FL_ENOMEM : fl_ddl(t, head, q.p, err, errsize);
		free(q.p);
		if (rc < 0 || !t->cluster)
			continue;
		/* the table loaded and queried: over every shard's, a trace on one */
		q = (struct sql){0};
		col_list(&q, d);
		sql_add(&q, " ENGINE = Distributed(`%s`, `%s`, `%s_local`, cityHash64(trace_uuid))",
			t->cluster, t->database, d->name);
		snprintf(head, sizeof(head), "CREATE TABLE IF NOT EXISTS `%s`.`%s`", t->database,
			 d->name);
		rc = q.nomem ? FL_ENOMEM : fl_ddl(t, head, q.p, err, errsize);
		free(q.p);
	}
	return rc;
}

/* One server's columns of the database: "table\tcolumn\ttype" lines. */
static int server_columns(struct fl_ch *ch, const char *db, struct fl_buf *b, char *err,
			  size_t errsize)
{
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "SELECT table, name, type FROM system.columns WHERE database = '%s' "
		 "FORMAT TabSeparated",
		 db);
	int rc = exec_on(ch, sql, b, err, errsize);
	/* the text is searched for whole lines: a NUL would end it early */
	if (!rc && (fl_buf_reserve(b, 1) < 0))
		rc = FL_ENOMEM;
	if (!rc)
		b->p[b->len] = 0;
	return rc;
}

/* A table's line, "table\tcolumn\t" at a line's start: its type (up to the
 * line end), or NULL. */
static const char *column_type(const struct fl_buf *b, const char *table, const char *col,
			       size_t *len)
{
	char key[200];
	int n = snprintf(key, sizeof(key), "%s\t%s\t", table, col);
	const char *p = (const char *)b->p;
	while (p && *p) {
		if (strncmp(p, key, (size_t)n) == 0) {
			const char *v = p + n, *nl = strchr(v, '\n');
			*len = nl ? (size_t)(nl - v) : strlen(v);
			return v;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static int has_table(const struct fl_buf *b, const char *table)
{
	char key[100];
	int n = snprintf(key, sizeof(key), "%s\t", table);
	for (const char *p = (const char *)b->p; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, key, (size_t)n) == 0)
			return 1;
	return 0;
}

/* The tables of one server: name (and name_local on a cluster's). */
static int check_server(const struct fl_target *t, struct fl_ch *ch, const char *suffix,
			struct fl_buf *b, char *err, size_t errsize)
{
	int rc = server_columns(ch, t->database, b, err, errsize);
	for (uint32_t i = 0; rc == 0 && i < NTABLES; i++) {
		const struct fl_tabledef *d = &tables[i];
		char name[80];
		snprintf(name, sizeof(name), "%s%s", d->name, suffix);
		if (!has_table(b, name)) {
			snprintf(err, errsize,
				 "%s: table %s.%s does not exist: --create makes the database "
				 "and its tables",
				 fl_ch_where(ch), t->database, name);
			return FL_EUSAGE;
		}
		for (uint32_t c = 0; c < d->ncols; c++) {
			size_t len;
			const char *type = column_type(b, name, d->cols[c].name, &len);
			if (type && len == strlen(d->cols[c].type) &&
			    memcmp(type, d->cols[c].type, len) == 0)
				continue;
			if (!type)
				snprintf(err, errsize,
					 "%s: table %s.%s has no column %s (%s): not a table this "
					 "loader made (--create makes missing tables, it does not "
					 "change one)",
					 fl_ch_where(ch), t->database, name, d->cols[c].name,
					 d->cols[c].type);
			else
				snprintf(err, errsize,
					 "%s: table %s.%s: column %s is %.*s, the loader writes %s "
					 "(--create makes missing tables, it does not change one)",
					 fl_ch_where(ch), t->database, name, d->cols[c].name,
					 (int)(len > 64 ? 64 : len), type, d->cols[c].type);
			return FL_EUSAGE;
		}
	}
	return rc;
}

int fl_check_schema(const struct fl_target *t, char *err, size_t errsize)
{
	if (!fl_name_ok(t->database) || (t->cluster && !fl_name_ok(t->cluster))) {
		snprintf(err, errsize, "a database or cluster name is letters, digits and '_'");
		return FL_EUSAGE;
	}
	struct fl_buf b = {0};
	int rc = check_server(t, t->chs[0], "", &b, err, errsize);
	/* with a cluster: the shards' tables on every server given */
	for (uint32_t i = 0; rc == 0 && t->cluster && i < t->nch; i++)
		rc = check_server(t, t->chs[i], "_local", &b, err, errsize);
	fl_buf_free(&b);
	return rc;
}
