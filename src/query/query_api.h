/*
 * src/query/query_api.h - the SQL layer: a trace (or a collection, with
 * its kernel events) as tables that SQLite queries (docs/query.md).
 *
 * Above the analysis layer (it uses the collections and the scheduling
 * model), below the command (`ringtrace query`, `ringtrace latency`).
 * The only layer that links libsqlite3.
 *
 * Three parts:
 *
 *   store    (store.c) the tables, in columns of our own: one array per
 *            column, strings interned once. Filling a column is an array
 *            store, so the import runs at the reader's speed, not at
 *            SQLite's insert speed (about 1M rows/s, which no amount of
 *            batching lifts: each insert walks a B-tree).
 *   import   (import.c, import_kernel.c) reads the trace through the
 *            reader and the collections and fills the store's tables
 *            (the list below), in one pass, in time order.
 *   sqlite   (vtab.c, db.c) every table of the store as a virtual table
 *            of SQLite (module "ringtrace", in the temp schema), with
 *            equality and range constraints answered from sorted columns
 *            or an index made on first use (`args`, computed from the
 *            event tables, by a module of its own: args.c); `--db FILE`
 *            copies them into
 *            native tables of a database file; the authorizer that keeps
 *            a query inside the database.
 *
 * The tables (names and columns as Perfetto's trace processor names them
 * where the concept is the same). Times are CLOCK_MONOTONIC nanoseconds
 * (a record's ns), durations nanoseconds. NULL where unknown.
 *
 *   process       upid, pid, name, executable, hostname, uuid, trace (the
 *                 trace's directory name in its collection),
 *                 realtime_offset (CLOCK_REALTIME - CLOCK_MONOTONIC ns:
 *                 ts + realtime_offset is wall-clock ns since the epoch)
 *   thread        utid, tid, name, upid, start_ts, end_ts
 *   slice         id, ts, dur, utid, name, depth, parent_id, arg_set_id,
 *                 cpu: instant events (dur 0) and begin/end pairs (nested
 *                 per thread: depth, parent_id; a begin never ended: dur
 *                 -1); arg_set_id the begin's event id
 *   counter_track id, name, event, field
 *   counter       id, ts, track_id, value, utid
 *   args          arg_set_id, key, int_value, string_value, real_value,
 *                 value_type ('int', 'uint', 'real', 'string', 'pointer',
 *                 'bool', 'enum' (string_value the name, int_value the
 *                 number), 'array', 'bytes' (string_value as text)): every
 *                 field of every event; arg_set_id is the event's id.
 *                 Computed (args.c) from the event tables when read, in
 *                 order of arg_set_id, then field order
 *   <event>       one table per event (same name and fields across the
 *                 traces of a collection): id (= arg_set_id), ts, utid,
 *                 cpu, then its fields as typed columns; ringtrace_printf
 *                 records: id, ts, utid, cpu, text
 *   event_table   event, table_name, kind, fields, count: which table holds
 *                 which event (a name that cannot be an identifier, or that
 *                 is a table of its own, gets the safe name event_<N>)
 *   event_column  table_name, field, column_name, type (the same for
 *                 field names)
 *   ftrace_event  id, ts, cpu, utid, name, arg_set_id: every kernel event
 *   sched_slice   id, ts, dur, cpu, utid, end_state, priority
 *   thread_state  id, ts, dur, utid, state ('Running', 'R', 'S', 'D', ...
 *                 as Perfetto; 'R' runnable, 'U' unknown), cpu, waker_utid
 *   loss          ts, upid, utid, stream, dropped, overrun: one row per
 *                 place the reader found events missing
 *   stats         name, idx, severity, source, value, description
 *
 * Contracts:
 *  - The trace is untrusted: names become data, never SQL text (every
 *    identifier is quoted by qy_ident, and a name that is not a plain
 *    identifier gets a safe one); every loop over it is bounded by what
 *    was read.
 *  - The store is filled by one thread, then only read (the virtual
 *    tables make indexes lazily, in the same thread as SQLite's calls).
 *  - Out of memory is an error (-RINGTRACE_ENOMEM), never a crash; what
 *    was imported before stays queryable.
 */
#ifndef RINGTRACE_QUERY_API_H
#define RINGTRACE_QUERY_API_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis_api.h"

/* ---- the store (store.c) ---- */

enum qy_type {
	QY_INT = 1,  /* int64_t; QY_NULL_INT is NULL unless marked a value (qy_col.vmin) */
	QY_REAL = 2, /* double; a NaN is NULL */
	QY_TEXT = 3, /* uint32_t string id (qy_str); 0 is NULL */
};
#define QY_NULL_INT INT64_MIN

struct qy_coldef {
	const char *name; /* the SQL column name (quoted where declared) */
	uint8_t type;     /* enum qy_type */
};

struct qy_col {
	char *name;
	uint8_t type;
	void *v; /* int64_t[], double[] or uint32_t[] of cap rows */
	/*
	 * An INT column: the rows, ascending, whose INT64_MIN is a value, not
	 * NULL (NULL while there are none). A trace's field may hold it (a
	 * uint64 of 2^63, a flag bit; an int64's minimum), rarely: a list
	 * looked at only when a row holds INT64_MIN keeps the common path a
	 * plain array (no second array, no wider type, no flag per row).
	 */
	uint32_t *vmin;
	uint32_t nvmin, capvmin;
	/* made on first use by the virtual table, freed with the table */
	int8_t sorted;    /* -1 not known yet, 0 no, 1 ascending */
	uint32_t *perm;   /* rows in ascending order of this column (NULL: not made) */
	int64_t min, max; /* of the values not NULL, when sorted >= 0 (min > max: none) */
};

struct qy_table;
struct sqlite3_module;

/*
 * A computed table (`args`): its rows made, when read, from other tables
 * of the store, by a virtual table module of its own; it has no column
 * arrays (qy_row is not for it) and its maker counts its nrows.
 */
struct qy_table_ops {
	const char *module_name;
	const struct sqlite3_module *module; /* its aux is the store */
	void (*clear)(struct qy_table *t);   /* qy_table_clear's part */
	void (*free)(struct qy_table *t);    /* frees t->user */
	uint64_t (*bytes)(const struct qy_table *t);
};

struct qy_table {
	char *name; /* the SQL table name */
	uint32_t ncols;
	struct qy_col *cols;
	uint64_t nrows, cap;
	uint64_t base; /* rows cleared before (qy_table_clear): rowid = base + row */
	void *user;    /* the importer's (for instance its event's layout) */
	const struct qy_table_ops *ops; /* a computed table's; NULL: stored */
};

struct qy_store;

struct qy_store *qy_store_new(void);
void qy_store_free(struct qy_store *s);

/* A table: name and columns copied. NULL: out of memory, or the name is
 * already a table's. */
struct qy_table *qy_table_add(struct qy_store *s, const char *name, const struct qy_coldef *cols,
			      uint32_t ncols);
uint32_t qy_table_count(const struct qy_store *s);
struct qy_table *qy_table_at(struct qy_store *s, uint32_t i);
struct qy_table *qy_table_find(struct qy_store *s, const char *name);
/* The column's index, or -1. */
int qy_col_find(const struct qy_table *t, const char *name);

/*
 * A new row, every column NULL: its index (t->nrows - 1), or -1 out of
 * memory. Then fill it through the column arrays: qy_i64(t, c)[row] = v.
 */
int64_t qy_row(struct qy_table *t);
static inline int64_t *qy_i64(struct qy_table *t, uint32_t c)
{
	return (int64_t *)t->cols[c].v;
}
static inline double *qy_f64(struct qy_table *t, uint32_t c)
{
	return (double *)t->cols[c].v;
}
static inline uint32_t *qy_sid(struct qy_table *t, uint32_t c)
{
	return (uint32_t *)t->cols[c].v;
}
/*
 * Row r of INT column c holds the value INT64_MIN, not NULL (it was stored
 * there): for the importer of a trace's values, which marks each row once,
 * in any order. 0, or -1 out of memory.
 */
int qy_i64_min(struct qy_table *t, uint32_t c, uint64_t r);
/* Whether row r of an INT column is marked by qy_i64_min (its value
 * then INT64_MIN): a binary search in the marked rows. */
int qy_col_min_at(const struct qy_col *col, uint64_t r);
/* Whether value v of row r of INT column col is NULL: every reader of an
 * INT column asks this, not v == QY_NULL_INT. */
static inline int qy_int_null(const struct qy_col *col, uint64_t r, int64_t v)
{
	return v == QY_NULL_INT && (!col->nvmin || !qy_col_min_at(col, r));
}
/* Drop every row (their rowids are not reused: base grows), and the
 * indexes. For `--db FILE` imports copied out a chunk at a time. */
void qy_table_clear(struct qy_table *t);
/* Forget what the virtual table learned of the columns (sortedness,
 * indexes): after rows were changed. */
void qy_table_changed(struct qy_table *t);

/*
 * Strings, interned: the same bytes give the same id. 0 is NULL (s NULL);
 * QY_STR_NOMEM out of memory. Bytes are kept as given (a NUL inside ends
 * the string for SQLite).
 */
#define QY_STR_NOMEM UINT32_MAX
uint32_t qy_str(struct qy_store *s, const char *p, size_t len);
static inline uint32_t qy_strz(struct qy_store *s, const char *p)
{
	return p ? qy_str(s, p, __builtin_strlen(p)) : 0;
}
/* The string of an id (NULL for 0), its length in *len. */
const char *qy_str_get(const struct qy_store *s, uint32_t id, size_t *len);

/* Bytes the store holds (columns, strings, indexes): the memory per event. */
uint64_t qy_store_bytes(const struct qy_store *s);

/*
 * An SQL identifier: name in double quotes, quotes doubled, into buf.
 * 0, or -1 if it does not fit.
 */
int qy_ident(char *buf, size_t size, const char *name);
/* Whether name may be used as a table or column name as it is: ASCII
 * letters, digits and '_', not starting with a digit, at most 64 bytes,
 * not an SQL keyword and not starting with "sqlite_". */
int qy_plain_name(const char *name);

/* ---- the import (import.c, import_kernel.c) ---- */

struct qy_import_opts {
	/*
	 * Called every chunk_events records (0: never) and at the end, with
	 * the store as it stands: `--db FILE` copies the rows out and clears
	 * the tables (qy_table_clear), so that memory stays bounded on a trace
	 * larger than memory. The importer keeps what spans chunks (threads,
	 * open slices) itself. Nonzero stops the import with that error.
	 */
	uint64_t chunk_events;
	int (*chunk)(void *arg, struct qy_store *s, int last);
	/* A slice whose row was already copied out ended: its duration. */
	int (*late_dur)(void *arg, int64_t slice_id, int64_t dur);
	void *arg;
	/*
	 * Damage the import finds, one line each (may be NULL): an event
	 * whose fields cannot be read (imported without them). What the
	 * reader finds in the files goes to the callback the collection was
	 * opened with (coll_open's), as it reads; both are counted in stats.
	 */
	void (*on_error)(void *arg, const char *msg);
};

struct qy_import_result {
	uint64_t records; /* records read (events and loss marks) */
	uint64_t events;  /* events imported */
	uint64_t errors;  /* damage found (also in stats) */
};

/*
 * Import the collection (one trace, or a collection with its kernel
 * trace) into the store: every table above, created first. 0, or a
 * negative error with a message in err (the tables hold what was
 * imported up to it).
 */
int qy_import(struct qy_store *s, const struct coll *c, const struct qy_import_opts *o,
	      struct qy_import_result *r, char *err, size_t errsize);

/*
 * The event an event table holds (the <event> tables above, and
 * ringtrace_printf): its name's string id; 0 for every other table. For a
 * consumer of the chunks, which sees the tables before event_table (written
 * at the end) names them.
 */
uint32_t qy_event_name(const struct qy_table *t);

/*
 * The rows of the computed `args` table as they stand (its chunk's rows),
 * in its order (arg_set_id, then field order), without SQLite: for a
 * consumer that copies every row out. Strings as string ids (0: NULL).
 */
struct qy_args_row {
	int64_t arg_set_id;
	uint32_t key, string_value, value_type;
	int64_t int_value; /* QY_NULL_INT when int_null */
	int int_null;      /* int_value is NULL (INT64_MIN may be a value) */
	double real_value; /* NaN: NULL */
};
struct qy_args_iter {
	const struct qy_table *t;
	uint64_t i; /* the event */
	uint32_t k; /* its field */
};
/* From the first row of t, the store's `args` table. -1: t is not it. */
int qy_args_iter_init(struct qy_args_iter *it, const struct qy_table *t);
/* The next row into *r: 1, or 0 after the last. */
int qy_args_iter_next(struct qy_args_iter *it, struct qy_args_row *r);

/* ---- SQLite (vtab.c, db.c) ---- */

typedef struct sqlite3 sqlite3;

/*
 * Every table of the store as a virtual table temp."<name>" of db
 * (module "ringtrace"). The store must outlive db's use of them.
 * 0, or -1 with SQLite's message in err.
 */
int qy_sqlite_attach(sqlite3 *db, struct qy_store *s, char *err, size_t errsize);
/* One table of the store (made after qy_sqlite_attach, say), the same way. */
int qy_sqlite_attach_table(sqlite3 *db, struct qy_store *s, struct qy_table *t, char *err,
			   size_t errsize);

/*
 * The virtual tables answer from the columns as they are when a
 * statement starts: rows appended or cleared since are seen (and the
 * indexes remade); a value changed in place (a slice's dur set when its
 * end is read) needs qy_table_changed(t) before the next statement. A
 * statement prepared before rows were added or cleared and run after
 * may fail with "table T changed since the statement was prepared" when
 * its plan counted on a column's order: prepare it again.
 */

/*
 * Copy every table of the store into native tables <schema>.<name> of db
 * (schema: "main", or an attached database's name; every name quoted),
 * with the same names, columns and types (INTEGER, REAL, TEXT) and the
 * rows in the store's order. create: make every table (one already there
 * is an error); 0: append, making only the tables not there yet (an
 * event seen for the first time in a later chunk). A store table without
 * its virtual table (added after qy_sqlite_attach) gets it first. All or
 * nothing (one savepoint, nested in the caller's transaction if one is
 * open). 0, or -1 with SQLite's message in err.
 *
 * `--db FILE` chunk by chunk: qy_sqlite_copy(db, s, "main", first, ...)
 * then qy_table_clear on every table, at each chunk of the import.
 */
int qy_sqlite_copy(sqlite3 *db, struct qy_store *s, const char *schema, int create, char *err,
		   size_t errsize);

/*
 * Keep the user's SQL inside the database: no ATTACH/DETACH (and so no
 * VACUUM INTO another file), no extension loading, no pragma that writes
 * outside it or changes the connection's safety; a statement that tries
 * gets SQLite's "not authorized". Call after the import's own statements.
 */
int qy_sqlite_lockdown(sqlite3 *db);

/* ---- pairing: the latency between two events (pair.c, pair_vtab.c) ---- */

/*
 * The pairs of a start and a stop event, made by the table-valued function
 * pairs(from, to, key, stop_key, by) that qy_sqlite_attach adds (computed
 * from the store's columns), so that `ringtrace latency` and a user's own
 * query (docs/query.md) pair alike. The rule, per key value, in time
 * order (ts, then id): a stop pairs with the most recent start not yet
 * paired (as nested calls close), and a stop with no start open is
 * unpaired, so is a start never stopped.
 *
 * The events by name (event_table.event), the key a field of each (NULL
 * or '': the thread, utid), the group a field of the start (NULL or '':
 * one group). Names are looked up in event_table and event_column (bound,
 * never pasted); keys compare as SQL's PARTITION BY would (NULLs alike,
 * integers and reals by number, texts by bytes).
 */
struct qy_pair_spec {
	const char *from, *to; /* start and stop events */
	const char *key;       /* field of both, or NULL: by thread */
	const char *stop_key;  /* the stop's key field where its name differs (NULL: key) */
	const char *by;        /* field of the start event, or NULL: one group */
};

/*
 * The pairs statement's text, for `ringtrace query` (malloc'd, the caller
 * frees *sql): SELECT ... FROM pairs(...) with the names as values (a name
 * other than letters, digits and '_' as its bytes in hex). Its rows, one
 * per pair and per unpaired event, in the time order of their first event:
 *   id, ts, utid            the start (NULL: a stop never started)
 *   dur                     stop_ts - ts (NULL: unpaired)
 *   stop_id, stop_ts, stop_utid   the stop (NULL: a start never stopped)
 *   key, grp                the key's and the group field's values
 * 0; -RINGTRACE_ENOENT: an event or field is not in the tables, or from is
 * to (err says which, and what there is); -RINGTRACE_ENOMEM; -RINGTRACE_EINVAL
 * with SQLite's message.
 */
int qy_pair_sql(sqlite3 *db, const struct qy_pair_spec *p, char **sql, char *err, size_t errsize);

/* A thread as the tables name it: tid -1 and name "" when utid is unknown. */
struct qy_pair_thread {
	int64_t utid, tid;
	char name[64];
};

/* A pair, or an unpaired event (its missing side's id -1). */
struct qy_pair_item {
	int64_t id, ts, stop_id, stop_ts, dur; /* dur -1: unpaired */
	struct qy_pair_thread start_thread, stop_thread;
	char *key, *grp; /* the values as text (NULL: SQL NULL) */
	int lossy;       /* events were lost where they could have broken it */
};

/* The pairs of one group: latencies in ascending order, the longest pairs. */
struct qy_pair_group {
	char *grp; /* the group field's value as text (NULL: NULL, or no --by) */
	int64_t *lat;
	uint64_t n, cap;
	struct qy_pair_item *top; /* longest first */
	uint32_t ntop;
	uint64_t lossy; /* pairs with a loss in their time span */
};

/* What qy_pairs_collect gives: the groups by value, the unpaired ones. */
struct qy_pairs {
	struct qy_pair_group *g;
	uint32_t ng;
	uint64_t npairs;
	uint64_t nstart_only, nstop_only;    /* starts never stopped, stops never started */
	uint64_t start_lossy, stop_lossy;    /* of them, with a loss after / before them */
	struct qy_pair_item *starts, *stops; /* the earliest unpaired ones (up to top) */
	uint32_t nstarts, nstops;
	uint64_t loss_places, lost_events; /* the loss table's rows and their sum */
};

/*
 * Run the pairs statement of sp (its names bound as parameters) and
 * collect its rows: per group the latencies (sorted) and the top longest
 * pairs, the unpaired counts and the top earliest of each, the threads
 * named from `thread`, the losses from `loss`. 0, -RINGTRACE_ENOMEM, or
 * -RINGTRACE_EINVAL with SQLite's message.
 */
int qy_pairs_collect(sqlite3 *db, const struct qy_pair_spec *sp, uint32_t top, struct qy_pairs *out,
		     char *err, size_t errsize);
void qy_pairs_free(struct qy_pairs *p);

/*
 * The nearest-rank percentile of n ascending values: the value at rank
 * ceil(permille / 1000 * n) (1-based; at least 1), permille 500 the
 * median, 999 p99.9, 1000 the maximum. 0 when n is 0.
 */
int64_t qy_pair_percentile(const int64_t *sorted, uint64_t n, unsigned permille);

#endif
