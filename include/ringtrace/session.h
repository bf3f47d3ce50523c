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
 *   RINGTRACE_SHM=/name        name the pool's shm object (for live status);
 *                              created new (O_EXCL), 0600: an existing object
 *                              of that name is an error, never used
 *   RINGTRACE_GROUP=NAME|GID   share the trace with a group (config.group)
 *   (and RINGTRACE_FILTERS, RINGTRACE_TRIGGERS: ringtrace/filter.h;
 *   RINGTRACE_CLOCK=monotonic; RINGTRACE_ATTACH=0: no attach listener,
 *   RINGTRACE_ATTACH=1: say why a program is not attachable, docs/attach.md)
 *
 * A program running with AT_SECURE (set-user-ID or set-group-ID, or with
 * file capabilities) ignores every RINGTRACE_* variable, silently: the
 * user who started it chose its environment, and must not make it write
 * files where that user says, with its privileges, or change what it
 * records. Such a program records only through the functions below.
 *
 * What a session creates, and what it refuses:
 *   - The output directory, made 0700 (0750 with a group), exactly,
 *     whatever the umask. An existing directory is taken only if it is a
 *     directory (a symbolic link there is refused, not followed), belongs
 *     to the process's effective uid, is writable by nobody else, and is
 *     empty; its mode is left as it is.
 *   - It is locked while the session records (flock on the directory):
 *     a second recorder on it, in another process or this one (a snapshot
 *     into it), is refused with a message naming the directory and the
 *     process holding it. The lock goes when the session stops or the
 *     process dies (a child forked without exec shares it until it exits:
 *     it still writes into the session's pool).
 *   - metadata, stream_<N>: 0600 (0640 and the group with a group), each
 *     opened through the directory's descriptor, created new (O_EXCL),
 *     never through a symbolic link; something planted at one of these
 *     names is an error naming it, and the session goes on counting
 *     (ringtrace_session_stop returns the error; the trace written so far
 *     stays). The metadata is written as .metadata.tmp (made new, whatever
 *     was at that name removed, never followed) and renamed over metadata.
 *   - .ringtrace-reserve: room kept for the metadata (a preallocated file,
 *     0600), given up when the disk is full and the metadata must be
 *     written, removed when the session stops.
 *   - A page that cannot be written (the disk full, an I/O error) is cut
 *     off its file again and counted, with its events, as unwritten (the
 *     metadata's `unwritten` lines, with the error's name); the session
 *     goes on taking pages from the buffer (the program never waits),
 *     tries the disk again every 100 ms and resumes when a write works.
 *     ringtrace_session_stop then returns an error that says how many
 *     events were not written and why; the trace is valid and counts them
 *     (docs/reliability.md).
 *   - Snapshots (ringtrace_session_snapshot, SIGUSR2, snapshot triggers):
 *     a new directory each, made and checked as the output directory;
 *     DIR.snapshot-K is made beside DIR through the descriptor of DIR's
 *     parent, opened at start.
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
	const char *output_dir; /* created if missing; if it exists: ours, empty (see above) */
	const char *events;     /* enable spec as RINGTRACE_EVENTS; NULL: "*" */
	enum ringtrace_rb_mode mode;
	size_t page_size;     /* 0: default */
	size_t pool_size;     /* 0: default */
	uint32_t max_writers; /* 0: default */
	const char *shm_name; /* NULL: anonymous */
	/*
	 * NULL: the trace is private (directory 0700, files 0600). A group
	 * name or number: shared with that group for reading (directory
	 * 0750, files 0640, both given that group; the process must be a
	 * member, or root). RINGTRACE_GROUP sets it from the environment.
	 */
	const char *group;
};

void ringtrace_session_config_init(struct ringtrace_session_config *cfg);
int ringtrace_session_start(const struct ringtrace_session_config *cfg);
/* Flush, drain, write the metadata, close. Returns 0 or a negative error. */
int ringtrace_session_stop(void);
/*
 * Write the buffer's current content as a complete trace in DIR (created;
 * if it exists, it is taken as output_dir would be), without stopping the
 * session. In overwrite
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
