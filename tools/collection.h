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

#endif
