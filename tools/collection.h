/*
 * A trace directory, or a trace collection: a directory whose
 * subdirectories are traces (one per process: `ringtrace record -p` /
 * `-a` make them, docs/attach.md). report, stat and export read either.
 */
#ifndef RINGTRACE_TOOLS_COLLECTION_H
#define RINGTRACE_TOOLS_COLLECTION_H

#include <stdint.h>

#include "ringtrace/trace.h"

#define COLL_MAX_TRACES 1024

struct coll {
	uint32_t n;
	char **dirs;         /* each trace's directory */
	const char **names;  /* each trace's name in the collection (its subdirectory) */
	ringtrace_trace **t; /* opened */
	int is_collection;   /* DIR held traces, not one */
	uint32_t failed;     /* traces of the collection that could not be opened (said) */
};

/*
 * Open DIR: one trace if it has a metadata file, else every subdirectory
 * that has one (in name order, at most COLL_MAX_TRACES, not through a
 * symbolic link). 0, or -1 having said why (on stderr, as `prog`); errors
 * met while reading go to on_error. A trace of a collection that cannot be
 * opened is said and left out (counted in failed); -1 if none can.
 */
int coll_open(const char *dir, const char *prog, ringtrace_trace_error_fn on_error, struct coll *c);
void coll_close(struct coll *c);

/*
 * The collection's records merged by time: each trace gives its records in
 * time order, and the earliest of the traces' next records goes first
 * (ties: the trace that comes first by name). A collection's traces convert
 * the one cycle counter the same way (docs/attach.md), so the order across
 * processes is the order of events. report and sched read through it.
 */
struct coll_merge {
	const struct coll *c;
	struct ringtrace_trace_record *cur; /* each trace's next record */
	int *have;                          /* whether it has one */
	int last;                           /* the trace given last (-1: none yet) */
};
/* 0, or -1 out of memory. */
int coll_merge_init(struct coll_merge *m, const struct coll *c);
/* The index of the trace whose record is next, and *rec (valid until the
 * next call, which may change it: a caller may edit it); -1 at the end. */
int coll_merge_next(struct coll_merge *m, struct ringtrace_trace_record **rec);
void coll_merge_free(struct coll_merge *m);

#endif
