/*
 * src/fleet/fleet_api.h - the fleet loader: traces of many machines loaded
 * into ClickHouse over its HTTP interface, to be queried together
 * (`ringtrace load --clickhouse URL DIR...`, docs/fleet.md).
 *
 * Above the SQL layer (src/query): a trace is imported into the query
 * layer's column store exactly as `ringtrace query` imports it, and the
 * store's columns are encoded as RowBinary batches, so that the fleet's
 * tables hold the same rows as `ringtrace query`'s, plus on every row
 * the machine (`host`), the trace (`trace_uuid`), the load (`load_id`)
 * and the trace's day (`day`, the partition key). The only layer that
 * links libcurl.
 *
 * Four parts:
 *
 *   ch       (ch.c) one ClickHouse server over HTTP(S): a statement and
 *            its answer, an INSERT with its body. Credentials never in a
 *            URL that is sent or printed, never in the process list.
 *   rowbin   (rowbin.c) the RowBinary encoding into a growing buffer.
 *   schema   (schema.c) the fleet's tables: their ClickHouse columns and
 *            the DDL (local tables, and Distributed ones over a cluster),
 *            for ClickHouse 18.16 (Debian 12's) and later.
 *   load     (load.c) one trace directory loaded: identity, the `loads`
 *            row, the batches, the replacement of earlier loads.
 *
 * Contracts:
 *  - A trace is untrusted and its names are data: they travel only in
 *    RowBinary bodies, never in SQL text. The only identifiers in SQL are
 *    the database and cluster names of the command line, checked by
 *    fl_name_ok and quoted with back quotes.
 *  - An error says what failed and where (the server's URL without its
 *    credentials, the server's own message, the table) and never holds a
 *    password.
 *  - One thread per fl_ch.
 */
#ifndef RINGTRACE_FLEET_API_H
#define RINGTRACE_FLEET_API_H

#include <stddef.h>
#include <stdint.h>

#include "query/query_api.h"

/* ---- a ClickHouse server over HTTP (ch.c) ---- */

/* Errors of the fleet layer (negative returns). */
enum {
	FL_EDOWN = -1001,   /* cannot connect, or the connection broke (server down or killed) */
	FL_EAUTH = -1002,   /* the server refused the user or password */
	FL_ESERVER = -1003, /* the server answered with an error (its message in err) */
	FL_EUSAGE = -1004,  /* a bad URL, name or option */
	FL_ENOMEM = -1005,  /* out of memory */
	FL_ETRACE = -1006,  /* the trace cannot be read */
};

/*
 * Where the credentials come from, in this order of precedence (the user
 * and the password each from the first source that has it, so that
 * http://loader@host/ with --password-file F is user loader, F's
 * password):
 *   1. the URL's user and password (http://USER:PASSWORD@host:port/,
 *      percent-encoded as URLs are);
 *   2. the password: password_file (--password-file FILE): its first line
 *      (no line end) is the password; the file must not be readable or
 *      writable by others (mode & 077 == 0), or it is refused (FL_EUSAGE);
 *   3. the environment: RINGTRACE_CLICKHOUSE_USER,
 *      RINGTRACE_CLICKHOUSE_PASSWORD;
 *   4. user "default", no password.
 * They are sent as the X-ClickHouse-User / X-ClickHouse-Key headers
 * (never as URL parameters, which a server logs), over TLS when the URL
 * is https (certificate and host name verified; cacert: a CA file, NULL
 * for the system's). A user or password holding a control character is
 * refused (FL_EUSAGE): it would end the header.
 *
 * A password in the URL is in the command line, which every user of the
 * machine can read (/proc/PID/cmdline) until the program overwrites it:
 * a program takes a copy of a URL argument for fl_ch_opts.url, then calls
 * fl_url_hide_password on the argument itself, first thing. The password
 * file and the environment are the safe ways (docs/fleet.md).
 */
struct fl_ch_opts {
	const char *url; /* http[s]://[USER[:PASSWORD]@]HOST[:PORT][/] */
	const char *password_file;
	const char *cacert;
	long connect_timeout_ms; /* 0: 5000 */
	long timeout_ms;         /* a whole request; 0: none */
};

struct fl_ch;

/*
 * Overwrite, in place, the password of a URL argument
 * (http[s]://USER:PASSWORD@...) with '*', so that the process list no
 * longer shows it (argv's strings are what /proc/PID/cmdline reads). The
 * number of characters overwritten (0: the argument holds no password).
 */
size_t fl_url_hide_password(char *arg);

/*
 * A server handle (no connection made yet: the first request makes it).
 * The URL's path and query are refused (FL_EUSAGE): the database is an
 * option of its own. 0 and *out, or a negative error with err.
 */
int fl_ch_open(const struct fl_ch_opts *o, struct fl_ch **out, char *err, size_t errsize);
void fl_ch_close(struct fl_ch *ch);
/* The URL as printed in messages: scheme, host and port, no credentials. */
const char *fl_ch_where(const struct fl_ch *ch);
/* The user name sent (for the `loads` table's `loaded_by`). */
const char *fl_ch_user(const struct fl_ch *ch);

/* A growing byte buffer (the answers, the RowBinary bodies). */
struct fl_buf {
	uint8_t *p;
	size_t len, cap;
};
/* Room for need more bytes: 0, or FL_ENOMEM. */
int fl_buf_reserve(struct fl_buf *b, size_t need);
void fl_buf_free(struct fl_buf *b);

/*
 * Run one statement (sql: its whole text; settings: "name=value&..."
 * URL parameters, or NULL). The answer's body into *out when out is not
 * NULL (cleared first; the caller frees it). 0, or FL_EDOWN, FL_EAUTH,
 * FL_ESERVER (the server's message in err, trimmed to its first line),
 * FL_ENOMEM.
 */
int fl_ch_exec(struct fl_ch *ch, const char *sql, const char *settings, struct fl_buf *out,
	       char *err, size_t errsize);

/*
 * An INSERT: "INSERT INTO db.table FORMAT RowBinary" with body as its
 * data, sent in one request. Same returns as fl_ch_exec.
 */
int fl_ch_insert(struct fl_ch *ch, const char *sql, const char *settings, const void *body,
		 size_t len, char *err, size_t errsize);

/* ---- RowBinary (rowbin.c) ---- */

/*
 * The RowBinary encoding (little-endian fixed-size numbers; a String is
 * its length as LEB128 then its bytes; Nullable(T) a byte 1 for NULL, or
 * 0 and T). Each appends to b: 0, or FL_ENOMEM.
 */
int fl_rb_i64(struct fl_buf *b, int64_t v);
int fl_rb_u64(struct fl_buf *b, uint64_t v);
int fl_rb_u8(struct fl_buf *b, uint8_t v);
int fl_rb_u16(struct fl_buf *b, uint16_t v); /* a Date: days since 1970-01-01 */
int fl_rb_f64(struct fl_buf *b, double v);
int fl_rb_str(struct fl_buf *b, const void *p, size_t len);
int fl_rb_null(struct fl_buf *b);    /* a Nullable's NULL */
int fl_rb_notnull(struct fl_buf *b); /* a Nullable's marker before its value */

/* ---- the schema (schema.c) ---- */

/*
 * A database or cluster name from the command line: ASCII letters,
 * digits and '_', not starting with a digit, 1 to 64 bytes.
 */
int fl_name_ok(const char *name);

/*
 * The fleet's tables. Each has the leading columns
 *   host String, trace_uuid String, load_id UInt64, day Date
 * then the columns of the query layer's table of the same name
 * (query_api.h: INTEGER as Int64, REAL as Float64, TEXT as String;
 * Nullable where the store may hold NULL), in the same order:
 *   process, thread, slice, counter_track, counter, args, event
 *   (every event: id, ts, utid, cpu, name: the union of the per-event
 *   tables, which differ between traces and are not loaded),
 *   ftrace_event, sched_slice, thread_state, loss, stats,
 * and `loads` (one row per load and state, fl_load below).
 * Engines, ORDER BY and PARTITION BY as docs/fleet.md justifies them.
 */
struct fl_coldef {
	const char *name;
	const char *type; /* ClickHouse type, e.g. "Int64", "Nullable(String)" */
};
struct fl_tabledef {
	const char *name;
	const struct fl_coldef *cols;
	uint32_t ncols;
	const char *engine_tail; /* "ENGINE = MergeTree() PARTITION BY ... ORDER BY ..." */
};
uint32_t fl_table_count(void);
const struct fl_tabledef *fl_table(uint32_t i);
const struct fl_tabledef *fl_table_find(const char *name);

/*
 * Where the tables are: the database, and the cluster (NULL: one server).
 * With a cluster the data tables are <name>_local on every shard and
 * <name> is a Distributed table over them sharded by
 * cityHash64(trace_uuid), so that a trace's rows stay on one shard; the
 * loader inserts into the Distributed tables (insert_distributed_sync=1,
 * so that an INSERT that returned is on its shard).
 *
 * The DDL reaches every shard by ON CLUSTER where the cluster has
 * distributed DDL (ZooKeeper); where it has not (18.16 without
 * ZooKeeper answers "DDL background thread is not initialized"), by
 * running each statement on every server given: then the servers given
 * must cover every shard of the cluster (system.clusters, is_local),
 * and fl_shards says which is missing.
 */
struct fl_target {
	const char *database;
	const char *cluster; /* NULL: one server */
	struct fl_ch **chs;  /* the servers given (chs[0] is the one loaded through) */
	uint32_t nch;
};

/*
 * One statement on every shard: "HEAD ON CLUSTER `cluster` TAIL" on
 * chs[0], or where the cluster has no distributed DDL "HEAD TAIL" on
 * every server given (which must hold every shard: else FL_EUSAGE naming
 * the shard without one); "HEAD TAIL" on chs[0] without a cluster. For
 * the DDL and the ALTER TABLE ... DELETE of a replaced load. The error
 * names the server.
 */
int fl_ddl(const struct fl_target *t, const char *head, const char *tail, char *err,
	   size_t errsize);
/* Create the database and every table (IF NOT EXISTS): 0 or an error. */
int fl_create(const struct fl_target *t, char *err, size_t errsize);
/* The tables exist as this loader makes them (columns by name and type):
 * 0, or FL_EUSAGE saying which differs and that --create makes them. */
int fl_check_schema(const struct fl_target *t, char *err, size_t errsize);

/* ---- loading (load.c) ---- */

struct fl_load_opts {
	const struct fl_target *target;
	int replace;          /* --replace: earlier loads of the same trace removed */
	uint64_t batch_rows;  /* rows per INSERT (0: 1,000,000) */
	const char *save_dir; /* NULL, or write each batch body to files there too (the benchmark) */
	const char *loaded_by; /* NULL: the ch's user and the local login */
	int quiet;
};

struct fl_load_result {
	char trace_uuid[37];
	char host[256]; /* the trace's host name ("" unknown) */
	uint64_t load_id;
	int skipped; /* already loaded completely: nothing sent */
	uint64_t rows_total;
	uint64_t rows[32]; /* per table, in fl_table order */
	uint64_t bytes;    /* RowBinary bytes sent */
	double seconds;
};

/*
 * Load one trace directory (a trace, a collection with its kernel
 * events, a snapshot, a recovered trace).
 *
 * Its identity: trace_uuid, the trace's uuid (a collection's: one made
 * from its traces' uuids), and a digest of its metadata files, so that
 * two snapshots of one flight recorder (one uuid) are two dumps, and the
 * same directory loaded twice is one. A load of a dump already loaded
 * completely is skipped (skipped = 1) unless replace; an incomplete
 * earlier load of it is always replaced. Replaced loads' rows are
 * removed (ALTER TABLE ... DELETE, asynchronous: queries keep to the
 * complete loads, docs/fleet.md) once the new load is complete.
 *
 * The `loads` row is written as 'started' before any data and as
 * 'complete' (with the rows per table) after the last batch, so that a
 * load that stopped half-way stays marked incomplete.
 */
int fl_load(const struct fl_load_opts *o, const char *dir, struct fl_load_result *r, char *err,
	    size_t errsize);

#endif
