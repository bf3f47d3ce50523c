/*
 * src/query/query_internal.h - between the parts of the import: import.c
 * (the user traces' tables, the threads, the stats) and import_kernel.c
 * (the kernel trace's tables: ftrace_event, sched_slice, thread_state).
 * Not for the layers above: they use query_api.h.
 */
#ifndef RINGTRACE_QUERY_INTERNAL_H
#define RINGTRACE_QUERY_INTERNAL_H

#include "query/query_api.h"

/*
 * The threads of the import (import.c): one utid per tid across the
 * collection (a collection's traces share the machine's tid space), a
 * row of `thread` each. The kernel part finds or adds its threads here.
 */
struct qy_threads;

/*
 * The utid of tid, the thread made at first sight (name comm if not NULL,
 * upid NULL unless a user trace owns the tid), start_ts/end_ts widened to
 * ns. A later non-NULL comm replaces the name (the kernel's is the
 * latest). The `thread` rows are written at the end of the import (a
 * thread's name and times change until then, and chunks clear the
 * tables). -1: out of memory.
 */
int64_t qy_thread_utid(struct qy_threads *th, int64_t tid, const char *comm, uint64_t ns);

/*
 * A `stats` row (name, idx, severity 'info'/'data_loss'/'error', source
 * 'trace'/'analysis', value, description). 0, or -1 out of memory.
 */
int qy_stat(struct qy_store *s, const char *name, int64_t idx, const char *severity,
	    const char *source, int64_t value, const char *description);

/* ---- the computed `args` table (args.c) ---- */

struct qy_args;

/* The table `args` made in s (its rows computed from the event tables
 * named as sources). NULL: out of memory, or s has an args table. */
struct qy_args *qy_args_new(struct qy_store *s);
/*
 * An event table whose rows' fields are args rows: nf fields (columns 4 ..
 * 4 + nf - 1, after id, ts, utid, cpu), each its key and value_type
 * (string ids) and whether it is an enum (its number and name given by
 * qy_args_enum). The source's number, or -1 out of memory.
 */
int64_t qy_args_source(struct qy_args *a, struct qy_table *t, uint32_t nf, const uint32_t *key,
		       const uint32_t *vtype, const uint8_t *is_enum);
/* The event id's row of source src (-1: an event without args rows), ids
 * given in ascending order. 0, or -1 out of memory. */
int qy_args_event(struct qy_args *a, int64_t id, int64_t src, uint64_t row);
/* An enum field's number and name (string id, 0: none) at row of src. */
int qy_args_enum(struct qy_args *a, int64_t src, uint64_t row, uint32_t field, int64_t num,
		 uint32_t sid);

/*
 * Narrow the key range [*a, *b] of an INTEGER column by "key OP v" (op an
 * SQLITE_INDEX_CONSTRAINT_ EQ, GT, GE, LT or LE), as SQLite compares:
 * 0 when the range became empty (vtab.c).
 */
struct sqlite3_value;
int qy_bound(struct sqlite3_value *v, int op, int64_t *a, int64_t *b);

/* ---- the kernel trace's tables (import_kernel.c) ---- */

struct qy_kernel;

/* The kernel tables (ftrace_event, sched_slice, thread_state) created in
 * s. NULL: out of memory (err says so). */
struct qy_kernel *qy_kernel_new(struct qy_store *s, struct qy_threads *th, char *err,
				size_t errsize);
/*
 * A record of the collection's kernel trace, in time order, after import.c
 * gave it its event row (event_id, its args; -1 for a loss record): a row
 * of ftrace_event, and the scheduling events fed to the model that makes
 * sched_slice and thread_state. 0, or -1 out of memory.
 */
int qy_kernel_record(struct qy_kernel *k, const struct ringtrace_trace_record *rec,
		     int64_t event_id);
/* The end of the trace at end_ns: open intervals closed there, the
 * model's accounting added to stats. 0, or -1 out of memory. */
int qy_kernel_finish(struct qy_kernel *k, uint64_t end_ns);
void qy_kernel_free(struct qy_kernel *k);

/* The SQL layer's error message into err (errsize bytes, may be 0), as
 * printf formats it (store.c; db.c and vtab.c report through it). */
void qy_err(char *err, size_t errsize, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
