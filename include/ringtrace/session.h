/*
 * ringtrace/session.h - recording a trace in-process.
 *
 * A session owns a ring buffer, makes it the buffer enabled events are
 * recorded into, and runs a consumer thread that appends every page it
 * reads, unchanged, to the stream file of its writer in the output
 * directory (docs/format.md, section 7). Stopping flushes every writer's
 * page, drains the buffer and writes the metadata: the directory is then a
 * complete CTF 1.8 trace.
 *
 * In overwrite mode (flight recorder) the consumer writes nothing while
 * the session runs: the buffer keeps the most recent events, and stopping
 * (or ringtrace_session_snapshot(), or SIGUSR2 when the session was started
 * from the environment) writes the buffer's content as a trace.
 *
 * Environment (read by a constructor of the library: an instrumented
 * program can be traced without code changes):
 *   RINGTRACE_OUTPUT=DIR       start a session writing to DIR at load, stop at exit
 *   RINGTRACE_EVENTS=SPEC      events to enable ("sched_*,net_rx,-x"); default all
 *   RINGTRACE_MODE=discard|overwrite
 *   RINGTRACE_BUFFER_SIZE=N[k|m|g]   pool size     RINGTRACE_PAGE_SIZE=N[k|m]
 *   RINGTRACE_SHM=/name        name the pool's shm object (for live status)
 *
 * One session per process at a time. These functions take a mutex and
 * may block; do not call them from a signal handler or a probe.
 */
#ifndef RINGTRACE_SESSION_H
#define RINGTRACE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/ctf.h"
#include "ringtrace/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ringtrace_session_config {
	const char *output_dir; /* created if missing; must be empty if it exists */
	const char *events;     /* enable spec as RINGTRACE_EVENTS; NULL: "*" */
	enum ringtrace_rb_mode mode;
	size_t page_size;     /* 0: default */
	size_t pool_size;     /* 0: default */
	uint32_t max_writers; /* 0: default */
	const char *shm_name; /* NULL: anonymous */
};

void ringtrace_session_config_init(struct ringtrace_session_config *cfg);
int ringtrace_session_start(const struct ringtrace_session_config *cfg);
/* Flush, drain, write the metadata, close. Returns 0 or a negative error. */
int ringtrace_session_stop(void);
/*
 * Write the buffer's current content as a complete trace in DIR (created;
 * must not exist or be empty), without stopping the session. In overwrite
 * mode this is the flight recorder's dump; in discard mode it holds what the
 * consumer has not written yet.
 */
int ringtrace_session_snapshot(const char *dir);
/* The running session's buffer (NULL if none). */
ringtrace_rb *ringtrace_session_buffer(void);
/* Accounting so far: buffer counters plus pages and bytes written. */
int ringtrace_session_stats(struct ringtrace_trace_stats *st);

#ifdef __cplusplus
}
#endif
#endif
