/*
 * The scheduling view (docs/kernel.md, "The scheduling view"): `ringtrace
 * sched DIR` (cmd_sched.c), and the thread states `ringtrace export` adds
 * to the JSON of a collection with a kernel trace.
 */
#ifndef RINGTRACE_TOOLS_SCHED_H
#define RINGTRACE_TOOLS_SCHED_H

#include "collection.h"
#include "ringtrace/trace.h"

int ringtrace_cmd_sched(int argc, char **argv);

/* The index of the collection's kernel trace (its process line: pid 0,
 * "kernel"), or -1. */
int sched_kernel_trace(const struct coll *c);

/*
 * The thread states of the recorded threads (the tids of the collection's
 * user traces, and their pids) as spans "running" / "runnable" /
 * "blocked" (cat "sched") on their own tracks: a ringtrace_json_span_fn
 * and its argument. Made before the JSON is written; the spans are read
 * from a handle of the kernel trace of its own, once the writer has read
 * the user traces (their streams say the tids). NULL when there is
 * nothing to add (no kernel trace, or one without sched_switch) or out of
 * memory (said).
 */
struct sched_spans;
struct sched_spans *sched_spans_new(const struct coll *c, const char *prog);
int sched_spans_next(void *arg, struct ringtrace_json_span *span);
void sched_spans_free(struct sched_spans *s);

#endif
